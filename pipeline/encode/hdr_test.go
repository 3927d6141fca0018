package encode

import (
	"bytes"
	"image"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rawbatch/rawbatch/internal/testtool"
)

// hdrRamp is a w×h 16-bit image of code values rising left to right.
func hdrRamp(w, h int) *image.NRGBA64 {
	m := image.NewNRGBA64(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			v := uint16(x * 65535 / (w - 1))
			i := m.PixOffset(x, y)
			for c := range 3 {
				m.Pix[i+2*c], m.Pix[i+2*c+1] = byte(v>>8), byte(v)
			}
			m.Pix[i+6], m.Pix[i+7] = 0xff, 0xff
		}
	}
	return m
}

// HDR AVIF files carry CICP 9/16 (PQ) or 9/18 (HLG) in full range and no
// ICC profile (avifdec --info), a clli property with the content light
// level given (read back from the boxes; libavif 0.11's avifdec does not
// show it), and still decode after the clli insertion moved the image
// data.
func TestAVIFHDR(t *testing.T) {
	avifdec := testtool.Need(t, "avifdec")
	dir := t.TempDir()
	for _, c := range []struct {
		tr, cicp string
	}{{HDRPQ, "16"}, {HDRHLG, "18"}} {
		var b bytes.Buffer
		o := AVIFOptions{Depth: 10, Quality: 80, Speed: 9, Subsampling: "444", HDR: HDR{Transfer: c.tr, MaxCLL: 1234, MaxFALL: 321}}
		if err := AVIF(&b, hdrRamp(64, 40), o, []byte("not an ICC profile: must not be written"), Metadata{Make: "Canon"}); err != nil {
			t.Fatal(err)
		}
		cll, fall, ok := AVIFContentLightLevel(b.Bytes())
		if !ok || cll != 1234 || fall != 321 {
			t.Errorf("%s: clli %d/%d (present %t), want 1234/321", c.tr, cll, fall, ok)
		}
		p := filepath.Join(dir, c.tr+".avif")
		if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		info, err := exec.Command(avifdec, "--info", p).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: avifdec --info: %v\n%s", c.tr, err, info)
		}
		for _, want := range []string{"Color Primaries: 9", "Transfer Char. : " + c.cicp, "Matrix Coeffs. : 9", "Range          : Full", "ICC Profile    : Absent", "Exif Metadata  : Present", "Bit Depth      : 10"} {
			if !strings.Contains(string(info), want) {
				t.Errorf("%s: avifdec --info lacks %q:\n%s", c.tr, want, info)
			}
		}
		if out, err := exec.Command(avifdec, p, filepath.Join(dir, c.tr+".png")).CombinedOutput(); err != nil {
			t.Errorf("%s: avifdec cannot decode the file with clli: %v\n%s", c.tr, err, out)
		}
	}
	var b bytes.Buffer
	if err := AVIF(&b, hdrRamp(8, 8), AVIFOptions{Depth: 8, Quality: 80, Speed: 9, HDR: HDR{Transfer: HDRPQ}}, nil, Metadata{}); err == nil {
		t.Error("8-bit PQ AVIF: no error")
	}
}

// HDR JPEG XL files carry the colour encoding BT.2100 PQ or HLG (jxlinfo)
// and no ICC profile, and decode with djxl.
func TestJXLHDR(t *testing.T) {
	jxlinfo := testtool.Need(t, "jxlinfo")
	djxl := testtool.Need(t, "djxl")
	dir := t.TempDir()
	for _, c := range []struct{ tr, want string }{{HDRPQ, "PQ"}, {HDRHLG, "HLG"}} {
		var b bytes.Buffer
		o := JXLOptions{Bits: 16, Quality: 90, Effort: 3, HDR: HDR{Transfer: c.tr, MaxCLL: 1000}}
		if err := JXL(&b, hdrRamp(64, 40), o, nil, Metadata{Make: "Canon"}); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, c.tr+".jxl")
		if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		info, err := exec.Command(jxlinfo, p).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: jxlinfo: %v\n%s", c.tr, err, info)
		}
		if s := string(info); !strings.Contains(s, "Rec.2100 primaries, "+c.want+" transfer function") || strings.Contains(s, "ICC") || !strings.Contains(s, "intensity_target: 1000.0") {
			t.Errorf("%s: jxlinfo does not show BT.2100 %s without ICC:\n%s", c.tr, c.want, info)
		}
		if out, err := exec.Command(djxl, p, filepath.Join(dir, c.tr+".png")).CombinedOutput(); err != nil {
			t.Errorf("%s: djxl: %v\n%s", c.tr, err, out)
		}
	}
}
