package colour

import (
	"bytes"
	"encoding/binary"
	"math"
	"strings"
	"testing"
)

// iccTag returns the data of tag sig of an ICC profile (ICC.1:2010 §7.3).
func iccTag(t *testing.T, p []byte, sig string) []byte {
	t.Helper()
	n := int(binary.BigEndian.Uint32(p[128:]))
	for i := 0; i < n; i++ {
		e := p[132+12*i:]
		if string(e[:4]) == sig {
			off, size := binary.BigEndian.Uint32(e[4:]), binary.BigEndian.Uint32(e[8:])
			return p[off : off+size]
		}
	}
	t.Fatalf("tag %q not found", sig)
	return nil
}

func s15f16(b []byte) float64 { return float64(int32(binary.BigEndian.Uint32(b))) / 65536 }

func TestICCHeaders(t *testing.T) {
	names := ICCProfileNames()
	if len(names) != 12 {
		t.Errorf("embedded profiles: %d (%v), want 12", len(names), names)
	}
	for _, name := range names {
		p, ok := ICCProfile(name)
		if !ok {
			t.Fatalf("ICCProfile(%q) missing", name)
		}
		if len(p) < 132 {
			t.Fatalf("%s: %d bytes", name, len(p))
		}
		if size := binary.BigEndian.Uint32(p[0:]); int(size) != len(p) {
			t.Errorf("%s: size field %d, len %d", name, size, len(p))
		}
		if string(p[36:40]) != "acsp" {
			t.Errorf("%s: signature %q at 36, want acsp", name, p[36:40])
		}
		wantCS := "RGB "
		if strings.HasPrefix(name, "sGrey") {
			wantCS = "GRAY"
		}
		if string(p[16:20]) != wantCS {
			t.Errorf("%s: colour space %q, want %q", name, p[16:20], wantCS)
		}
		if string(p[20:24]) != "XYZ " {
			t.Errorf("%s: PCS %q, want XYZ", name, p[20:24])
		}
		wantMajor := byte(2)
		if strings.HasSuffix(name, "-v4") {
			wantMajor = 4
		}
		if p[8] != wantMajor {
			t.Errorf("%s: version %d, want %d", name, p[8], wantMajor)
		}
	}
	if _, ok := ICCProfile("nonexistent"); ok {
		t.Error("unknown profile found")
	}
	a, ok1 := ICCProfile("srgb-V4.icc")
	b, ok2 := ICCProfile("sRGB-v4")
	if !ok1 || !ok2 || !bytes.Equal(a, b) {
		t.Error("case-insensitive / .icc lookup failed")
	}
	a[0] ^= 0xff
	if c, _ := ICCProfile("sRGB-v4"); c[0] == a[0] {
		t.Error("ICCProfile returned shared storage")
	}
}

// The Space.ICC profiles must describe the same space: the colorant tags
// are the Bradford-adapted (to the ICC D50 PCS) columns of ToXYZ, and the
// TRC matches Decode.
func TestSpaceICCMatchesSpace(t *testing.T) {
	want := map[*Space]string{
		SRGB: "sRGB-v2-magic", DisplayP3: "DisplayP3-v2-magic", AdobeRGB: "AdobeCompat-v2",
		ProPhoto: "ProPhoto-v2-magic", Rec2020: "Rec2020-v2-magic",
	}
	for s, name := range want {
		p, _ := ICCProfile(name)
		if !bytes.Equal(s.ICC, p) {
			t.Errorf("%s: ICC is not %s", s.Name, name)
			continue
		}
		d50 := s.ToXYZD50()
		for c, sig := range []string{"rXYZ", "gXYZ", "bXYZ"} {
			tag := iccTag(t, p, sig)
			for r := 0; r < 3; r++ {
				if got := s15f16(tag[8+4*r:]); math.Abs(got-d50[r][c]) > 1e-4 {
					t.Errorf("%s %s[%d] = %.5f, computed %.5f", s.Name, sig, r, got, d50[r][c])
				}
			}
		}
		trc := iccTag(t, p, "rTRC")
		if string(trc[:4]) != "curv" {
			t.Fatalf("%s: rTRC type %q", s.Name, trc[:4])
		}
		n := int(binary.BigEndian.Uint32(trc[8:]))
		if n == 1 { // pure gamma, u8Fixed8Number
			g := float64(binary.BigEndian.Uint16(trc[12:])) / 256
			for _, v := range []float64{0.1, 0.5, 0.9} {
				if math.Abs(s.Decode(v)-math.Pow(v, g)) > 1e-12 {
					t.Errorf("%s: Decode(%v) ≠ %v^%v", s.Name, v, v, g)
				}
			}
			continue
		}
		// Sampled curve, linearly interpolated as a CMM would.
		for k := 0; k <= 1000; k++ {
			x := float64(k) / 1000
			pos := x * float64(n-1)
			j := min(int(pos), n-2)
			f := pos - float64(j)
			y0 := float64(binary.BigEndian.Uint16(trc[12+2*j:])) / 65535
			y1 := float64(binary.BigEndian.Uint16(trc[14+2*j:])) / 65535
			if y := y0 + f*(y1-y0); math.Abs(y-s.Decode(x)) > 5e-5 {
				t.Errorf("%s: ICC TRC(%v) = %.6f, Decode = %.6f", s.Name, x, y, s.Decode(x))
				break
			}
		}
	}
}
