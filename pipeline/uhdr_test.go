package pipeline

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"image"
	"image/jpeg"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/rawbatch/rawbatch/pipeline/colour"
	"github.com/rawbatch/rawbatch/pipeline/encode"
	"github.com/rawbatch/rawbatch/pipeline/look"
	"github.com/rawbatch/rawbatch/pipeline/synthdng"
)

// uhdrFile is an Ultra HDR JPEG taken apart by the test's own reader,
// written from the format's documents (Android "Ultra HDR Image Format
// v1.0", CIPA DC-007 MPF, ISO 21496-1 as libultrahdr lays it out), not
// from rawbatch's writer.
type uhdrFile struct {
	primary, gainMap []byte
	// mpfTIFF is the offset in the file of the MPF segment's TIFF
	// header; entries are the MP entries (attribute, size, offset).
	mpfTIFF int
	entries [][3]uint32
	// primaryXMP and gainXMP are the XMP packets; isoPrimary and
	// isoGain the ISO 21496-1 payloads after the URN.
	primaryXMP, gainXMP string
	isoPrimary, isoGain []byte
	// hdrgm are the gain map XMP's hdrgm attributes.
	hdrgm map[string]string
}

// jpegSegments calls f with each marker segment of the JPEG data before
// its SOS: the marker, the payload and the payload's offset in data.
func jpegSegments(t *testing.T, data []byte, f func(marker byte, payload []byte, at int)) {
	t.Helper()
	if len(data) < 4 || data[0] != 0xFF || data[1] != 0xD8 {
		t.Fatalf("not a JPEG (starts % x)", data[:min(4, len(data))])
	}
	for p := 2; p+4 <= len(data); {
		if data[p] != 0xFF {
			t.Fatalf("no marker at %d", p)
		}
		m := data[p+1]
		if m == 0xDA {
			return
		}
		n := int(binary.BigEndian.Uint16(data[p+2:]))
		if p+2+n > len(data) {
			t.Fatalf("segment %#x at %d overruns the file", m, p)
		}
		f(m, data[p+4:p+2+n], p+4)
		p += 2 + n
	}
	t.Fatal("no SOS")
}

const xmpSig = "http://ns.adobe.com/xap/1.0/\x00"

func readUHDR(t *testing.T, data []byte) uhdrFile {
	t.Helper()
	var u uhdrFile
	u.mpfTIFF = -1
	jpegSegments(t, data, func(m byte, p []byte, at int) {
		switch {
		case m == 0xE1 && bytes.HasPrefix(p, []byte(xmpSig)):
			u.primaryXMP = string(p[len(xmpSig):])
		case m == 0xE2 && bytes.HasPrefix(p, []byte("MPF\x00")):
			u.mpfTIFF = at + 4
			u.entries = readMPF(t, p[4:])
		case m == 0xE2 && bytes.HasPrefix(p, []byte(encode.ISO21496URN)):
			u.isoPrimary = p[len(encode.ISO21496URN):]
		}
	})
	if u.mpfTIFF < 0 || len(u.entries) != 2 {
		t.Fatalf("MPF: segment at %d, %d entries; want 2", u.mpfTIFF, len(u.entries))
	}
	e0, e1 := u.entries[0], u.entries[1]
	if e0[0]&0x07000000 != 0 || e0[0]&0x00FFFFFF != 0x030000 || e0[2] != 0 || e1[0] != 0 {
		t.Errorf("MPF entries %x: want the primary image (0x030000, offset 0) then a plain JPEG", u.entries)
	}
	start := u.mpfTIFF + int(e1[2])
	if int(e0[1]) != start || start+int(e1[1]) != len(data) {
		t.Fatalf("MPF: primary %d bytes, gain map %d bytes at %d (TIFF header at %d); the file has %d bytes", e0[1], e1[1], e1[2], u.mpfTIFF, len(data))
	}
	u.primary, u.gainMap = data[:start], data[start:]
	jpegSegments(t, u.gainMap, func(m byte, p []byte, _ int) {
		switch {
		case m == 0xE1 && bytes.HasPrefix(p, []byte(xmpSig)):
			u.gainXMP = string(p[len(xmpSig):])
		case m == 0xE2 && bytes.HasPrefix(p, []byte(encode.ISO21496URN)):
			u.isoGain = p[len(encode.ISO21496URN):]
		}
	})
	u.hdrgm = map[string]string{}
	for _, m := range regexp.MustCompile(`hdrgm:(\w+)="([^"]*)"`).FindAllStringSubmatch(u.gainXMP, -1) {
		u.hdrgm[m[1]] = m[2]
	}
	return u
}

// readMPF returns the MP entries of an MPF TIFF structure (CIPA DC-007
// §5.2: TIFF header, MP Index IFD, tag 0xB002 MPEntry of 16-byte entries).
func readMPF(t *testing.T, b []byte) [][3]uint32 {
	t.Helper()
	var bo binary.ByteOrder
	switch string(b[:4]) {
	case "MM\x00\x2a":
		bo = binary.BigEndian
	case "II\x2a\x00":
		bo = binary.LittleEndian
	default:
		t.Fatalf("MPF: TIFF header % x", b[:4])
	}
	ifd := int(bo.Uint32(b[4:]))
	n := int(bo.Uint16(b[ifd:]))
	var out [][3]uint32
	for i := range n {
		e := b[ifd+2+12*i:]
		tag, count := bo.Uint16(e), bo.Uint32(e[4:])
		switch tag {
		case 0xB000:
			if string(e[8:12]) != "0100" {
				t.Errorf("MPFVersion %q", e[8:12])
			}
		case 0xB001:
			if bo.Uint32(e[8:]) != 2 {
				t.Errorf("NumberOfImages %d, want 2", bo.Uint32(e[8:]))
			}
		case 0xB002:
			off := int(bo.Uint32(e[8:]))
			for k := range int(count) / 16 {
				p := b[off+16*k:]
				out = append(out, [3]uint32{bo.Uint32(p), bo.Uint32(p[4:]), bo.Uint32(p[8:])})
			}
		}
	}
	return out
}

// gainMapMeta is the gain map metadata as the hdrgm XMP gives it.
type gainMapMeta struct {
	min, max, gamma, offSDR, offHDR, capMin, capMax float64
}

func (u uhdrFile) meta(t *testing.T) gainMapMeta {
	t.Helper()
	f := func(k string) float64 {
		v, err := strconv.ParseFloat(u.hdrgm[k], 64)
		if err != nil {
			t.Fatalf("hdrgm:%s=%q: %v", k, u.hdrgm[k], err)
		}
		return v
	}
	return gainMapMeta{f("GainMapMin"), f("GainMapMax"), f("Gamma"), f("OffsetSDR"), f("OffsetHDR"), f("HDRCapacityMin"), f("HDRCapacityMax")}
}

// checkUHDRMetadata checks the XMP and ISO 21496-1 fields: hdrgm Version
// 1.0 and the container directory in the primary image naming the gain
// map's length, the gain map's hdrgm attributes, and the ISO record
// (version only in the primary; in the gain map one channel, the base's
// colour space, the same values as the XMP within a denominator step).
func checkUHDRMetadata(t *testing.T, u uhdrFile) gainMapMeta {
	t.Helper()
	x := u.primaryXMP
	for _, want := range []string{`hdrgm:Version="1.0"`, `Item:Semantic="Primary"`, `Item:Semantic="GainMap"`, `Item:Length="` + strconv.Itoa(len(u.gainMap)) + `"`} {
		if !strings.Contains(x, want) {
			t.Errorf("primary XMP lacks %s:\n%s", want, x)
		}
	}
	if u.hdrgm["Version"] != "1.0" || u.hdrgm["BaseRenditionIsHDR"] != "False" {
		t.Errorf("gain map XMP: Version %q, BaseRenditionIsHDR %q", u.hdrgm["Version"], u.hdrgm["BaseRenditionIsHDR"])
	}
	m := u.meta(t)
	if !(m.max > m.min) || m.min > 0 || m.max < 0 || m.gamma != 1 || m.offSDR != 1.0/64 || m.offHDR != 1.0/64 || m.capMin != 0 || !(m.capMax > 0) {
		t.Errorf("gain map XMP %+v", m)
	}
	if !bytes.Equal(u.isoPrimary, []byte{0, 0, 0, 0}) {
		t.Errorf("primary ISO 21496-1 payload % x, want its version alone (00 00 00 00)", u.isoPrimary)
	}
	b := u.isoGain
	if len(b) != 5+4+2*4+5*4 || b[0]|b[1]|b[2]|b[3] != 0 || b[4] != 0x48 {
		t.Fatalf("gain map ISO 21496-1 payload % x: want version 0, flags 0x48 (base colour space, common denominator, one channel)", b)
	}
	be := binary.BigEndian
	d := float64(be.Uint32(b[5:]))
	u32 := func(i int) float64 { return float64(be.Uint32(b[9+4*i:])) / d }
	s32 := func(i int) float64 { return float64(int32(be.Uint32(b[9+4*i:]))) / d }
	iso := gainMapMeta{capMin: u32(0), capMax: u32(1), min: s32(2), max: s32(3), gamma: u32(4), offSDR: s32(5), offHDR: s32(6)}
	for _, p := range [][2]float64{{iso.min, m.min}, {iso.max, m.max}, {iso.gamma, m.gamma}, {iso.offSDR, m.offSDR}, {iso.offHDR, m.offHDR}, {iso.capMin, m.capMin}, {iso.capMax, m.capMax}} {
		if math.Abs(p[0]-p[1]) > 1/d {
			t.Errorf("ISO 21496-1 %+v differs from the XMP %+v", iso, m)
			break
		}
	}
	return m
}

// uhdrHDR decodes an Ultra HDR file to linear light as the format's
// decoder does at full weight (a display whose headroom reaches
// HDRCapacityMax): the base's sRGB code values to linear, the gain map
// sampled bilinearly at the pixel's centre, G = Min + (Max − Min)·r^(1/Gamma),
// HDR = (SDR + OffsetSDR)·2^G − OffsetHDR. It returns the base, and the
// HDR image's luminance (sRGB/BT.709 weights; 1 = SDR white) W×H.
func uhdrHDR(t *testing.T, u uhdrFile, m gainMapMeta) (image.Image, []float64) {
	t.Helper()
	base, err := jpeg.Decode(bytes.NewReader(u.primary))
	if err != nil {
		t.Fatal(err)
	}
	gm, err := jpeg.Decode(bytes.NewReader(u.gainMap))
	if err != nil {
		t.Fatal(err)
	}
	gray, ok := gm.(*image.Gray)
	if !ok {
		t.Fatalf("gain map is %T, want a one-channel JPEG", gm)
	}
	w, h := base.Bounds().Dx(), base.Bounds().Dy()
	mw, mh := gray.Bounds().Dx(), gray.Bounds().Dy()
	at := func(x, y int) float64 {
		x, y = min(max(x, 0), mw-1), min(max(y, 0), mh-1)
		return float64(gray.Pix[y*gray.Stride+x]) / 255
	}
	lum := make([]float64, w*h)
	for y := range h {
		fy := (float64(y)+0.5)*float64(mh)/float64(h) - 0.5
		y0 := int(math.Floor(fy))
		ay := fy - float64(y0)
		for x := range w {
			fx := (float64(x)+0.5)*float64(mw)/float64(w) - 0.5
			x0 := int(math.Floor(fx))
			ax := fx - float64(x0)
			r := (1-ay)*((1-ax)*at(x0, y0)+ax*at(x0+1, y0)) + ay*((1-ax)*at(x0, y0+1)+ax*at(x0+1, y0+1))
			g := m.min + (m.max-m.min)*math.Pow(r, 1/m.gamma)
			rr, gg, bb, _ := base.At(x, y).RGBA()
			var hdr [3]float64
			for c, v := range [3]uint32{rr, gg, bb} {
				sdr := colour.SRGBDecode(float64(v>>8) / 255)
				hdr[c] = (sdr+m.offSDR)*math.Exp2(g) - m.offHDR
			}
			lum[y*w+x] = 0.2126*hdr[0] + 0.7152*hdr[1] + 0.0722*hdr[2]
		}
	}
	return base, lum
}

// samePixels reports the number of pixels where a and b differ.
func samePixels(a, b image.Image) (diff int, sameSize bool) {
	if a.Bounds() != b.Bounds() {
		return 0, false
	}
	r := a.Bounds()
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			if a.At(x, y) != b.At(x, y) {
				diff++
			}
		}
	}
	return diff, true
}

// TestUHDRHighlights: the chart of TestHDRHighlights (grey patches 1.7×
// and 0.85× SDR white after its +1.5 EV BaselineExposure, on a 0.1
// background). The Ultra HDR variant's primary image, and the whole file
// read as a plain JPEG, decode to exactly the JPEG variant's pixels (the
// same base: the over-white patch clipped to white); its MPF lists two images whose sizes and offsets give the
// primary image and the gain map; the hdrgm XMP and the ISO 21496-1
// record parse and agree. Decoded to linear light by the format's rule at
// full weight (uhdrHDR), each patch's luminance is within 1 % of the
// scene-referred render's (its linear value times the gain that puts
// mid grey where the SDR tone curve does, the AVIF's HDR rendition); the
// auto headroom is the brightest patch's (GainMapMax = log2 of it ± 0.05
// stop). With headroom=1 the over-white patch reaches 2× SDR white (the
// gain capped at one stop: (1 + 1/64)·2 − 1/64).
func TestUHDRHighlights(t *testing.T) {
	dir := t.TempDir()
	c := synthdng.Chart{W: 128, H: 64, Background: [3]float64{0.1, 0.1, 0.1}, Patches: []synthdng.Patch{
		{X0: 8, Y0: 8, X1: 56, Y1: 56, SRGBLinear: [3]float64{0.6, 0.6, 0.6}},
		{X0: 72, Y0: 8, X1: 120, Y1: 56, SRGBLinear: [3]float64{0.3, 0.3, 0.3}},
	}}
	in := writeChart(t, dir, c, 1, 1.5)
	var outs []OutputSpec
	for _, spec := range []string{"main=jpeg", "u=uhdr", "cap=uhdr,headroom=1"} {
		v, err := ParseVariant(spec)
		if err != nil {
			t.Fatal(err)
		}
		outs = append(outs, OutputSpec{Variant: v, Path: filepath.Join(dir, "c"+v.Suffix())})
	}
	s := referenceSettings()
	s.Tone, s.BaselineExposure = ToneDefault, true
	s.Crop = CropCamera
	if _, err := ConvertVariants(context.Background(), in, outs, s, nil); err != nil {
		t.Fatal(err)
	}
	sdr := decodeImage(t, outs[0].Path)
	gain := look.DefaultCurve.Apply(0.18) / 0.18 * math.Exp2(1.5)
	for i, o := range outs[1:] {
		data, err := os.ReadFile(o.Path)
		if err != nil {
			t.Fatal(err)
		}
		u := readUHDR(t, data)
		m := checkUHDRMetadata(t, u)
		base, lum := uhdrHDR(t, u, m)
		if diff, same := samePixels(sdr, base); !same || diff != 0 {
			t.Errorf("%s: the base differs from the JPEG variant in %d pixels (same size %t)", o.Variant.Name, diff, same)
		}
		// A reader that knows nothing of gain maps (Go's image/jpeg, which
		// stops at the first EOI) sees the JPEG variant's picture.
		if whole, err := jpeg.Decode(bytes.NewReader(data)); err != nil {
			t.Errorf("%s: image/jpeg: %v", o.Variant.Name, err)
		} else if diff, same := samePixels(sdr, whole); !same || diff != 0 {
			t.Errorf("%s: read as a plain JPEG, the file differs from the JPEG variant in %d pixels (same size %t)", o.Variant.Name, diff, same)
		}
		if px := patchMean(base, 16, 16, 48, 48); px[0] < 65000 || px[1] < 65000 || px[2] < 65000 {
			t.Errorf("%s: base: the over-white patch is %.0f, not clipped white", o.Variant.Name, px)
		}
		w := base.Bounds().Dx()
		t.Logf("%s: gain map %+v, %d + %d bytes", o.Variant.Name, m, len(u.primary), len(u.gainMap))
		// The patches' insides, and the background's below them (the
		// rectangle given with the 8-pixel margin taken off below).
		bg := synthdng.Patch{X0: 0, Y0: 58 - 8, X1: 128, Y1: 64 + 8, SRGBLinear: c.Background}
		for k, p := range append(c.Patches, bg) {
			var sum float64
			var n int
			for y := p.Y0 + 8; y < min(p.Y1-8, 64); y++ {
				for x := p.X0 + 8; x < p.X1-8; x++ {
					sum += lum[y*w+x]
					n++
				}
			}
			if n == 0 {
				t.Fatalf("patch %d: no pixels", k)
			}
			got := sum / float64(n)
			want := p.SRGBLinear[0] * gain
			if i == 1 && k == 0 {
				want = (1+1.0/64)*2 - 1.0/64 // headroom=1: the gain capped at 1 stop
			}
			t.Logf("%s: patch %.2f: HDR luminance %.3f × SDR white, want %.3f", o.Variant.Name, p.SRGBLinear[0], got, want)
			if math.Abs(got-want) > 0.01*want {
				t.Errorf("%s: patch %.2f: HDR luminance %.3f × SDR white, want %.3f ± 1 %%", o.Variant.Name, p.SRGBLinear[0], got, want)
			}
		}
		wantMax := math.Log2(0.6 * gain)
		if i == 1 {
			wantMax = 1
		}
		if math.Abs(m.max-wantMax) > 0.05 || m.capMax != m.max {
			t.Errorf("%s: GainMapMax %.3f, HDRCapacityMax %.3f: want both %.3f (the headroom)", o.Variant.Name, m.max, m.capMax, wantMax)
		}
	}
}

// TestUHDRRealFile: the sample 6D DNG at 800 pixels: the Ultra HDR
// variant's base decodes to exactly the JPEG variant's pixels, and where
// that base is clipped (a channel at 250 or more) and the scene-referred
// render lies between 1.05× SDR white and 0.95 × 2^GainMapMax (what the
// headroom keeps), the gain map (scale 1, its samples not averaged)
// brings the luminance to the lossless PQ JPEG XL's (the same HDR
// rendition, decoded with djxl) within a median relative error of 3 %
// (95th percentile 10 %: the gain map's own JPEG and the
// base's chroma differ from the rendition per pixel).
func TestUHDRRealFile(t *testing.T) {
	in := filepath.Join(testdata, "raw", "canon_eos_6d.dng")
	dir := t.TempDir()
	var outs []OutputSpec
	for _, spec := range []string{"main=jpeg,size=800", "u=uhdr,size=800,gainmap-scale=1", "p=jxl,hdr=pq,lossless=true,size=800,effort=1"} {
		v, err := ParseVariant(spec)
		if err != nil {
			t.Fatal(err)
		}
		outs = append(outs, OutputSpec{Variant: v, Path: filepath.Join(dir, "r"+v.Suffix())})
	}
	s := DefaultSettings()
	s.Lens = LensOff
	if _, err := ConvertVariants(context.Background(), in, outs, s, nil); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(outs[1].Path)
	if err != nil {
		t.Fatal(err)
	}
	u := readUHDR(t, data)
	m := checkUHDRMetadata(t, u)
	base, lum := uhdrHDR(t, u, m)
	if diff, same := samePixels(decodeImage(t, outs[0].Path), base); !same || diff != 0 {
		t.Errorf("the base differs from the JPEG variant in %d pixels (same size %t)", diff, same)
	}
	pq := decodeWholeFrame(t, outs[2].Path)
	if pq.Bounds().Size() != base.Bounds().Size() {
		t.Fatalf("PQ JPEG XL %v, base %v", pq.Bounds(), base.Bounds())
	}
	w, h := base.Bounds().Dx(), base.Bounds().Dy()
	var errs []float64
	top := 0.95 * math.Exp2(m.max)
	for y := range h {
		for x := range w {
			r, g, b, _ := base.At(x, y).RGBA()
			if max(r, g, b)>>8 < 250 {
				continue
			}
			pr, pg, pb, _ := pq.At(x, y).RGBA()
			var nits [3]float64
			for c, v := range [3]uint32{pr, pg, pb} {
				nits[c] = colour.PQDecode(float64(v) / 65535)
			}
			want := (0.2627*nits[0] + 0.6780*nits[1] + 0.0593*nits[2]) / colour.HDRReferenceWhite
			if want < 1.05 || want > top {
				continue
			}
			errs = append(errs, math.Abs(lum[y*w+x]/want-1))
		}
	}
	if len(errs) < 300 {
		t.Fatalf("only %d clipped pixels within the headroom (GainMapMax %.2f): not a test of the highlights", len(errs), m.max)
	}
	sort.Float64s(errs)
	med, p95 := errs[len(errs)/2], errs[len(errs)*95/100]
	t.Logf("%d clipped pixels: relative luminance error median %.2f %%, 95th percentile %.2f %%; gain map %+v", len(errs), 100*med, 100*p95, m)
	if med > 0.03 || p95 > 0.10 {
		t.Errorf("HDR luminance from the gain map: median error %.2f %%, 95th percentile %.2f %% (want ≤ 3 %%, ≤ 10 %%)", 100*med, 100*p95)
	}
	checkHDRShadows(t, base, pq, lum)
	// Nowhere much darker in HDR than in the base: the purple LED light of
	// the sample, outside sRGB, darkened 3 % of the map by over 0.1 stop
	// when its negative channel counted in the HDR luminance.
	gm, err := jpeg.Decode(bytes.NewReader(u.gainMap))
	if err != nil {
		t.Fatal(err)
	}
	gray := gm.(*image.Gray)
	dark := 0
	for _, v := range gray.Pix {
		if m.min+(m.max-m.min)*float64(v)/255 < -0.1 {
			dark++
		}
	}
	if f := float64(dark) / float64(len(gray.Pix)); f > 0.005 {
		t.Errorf("%.2f %% of the gain map darkens the base by over 0.1 stop (want ≤ 0.5 %%)", 100*f)
	} else {
		t.Logf("%.3f %% of the gain map below −0.1 stop", 100*f)
	}
}

// checkHDRShadows: in the shadows and dark mid-tones of the SDR base (its
// largest code 16–96 of 255, far below the tone curve's knee) the HDR
// renditions, the gain-mapped one (lum, relative to SDR white) and the PQ
// one, have the SDR base's luminance (look.HDRTone follows the SDR tone
// curve there): a median |log2 ratio| of at most 0.1 stop. Scene-linear
// light anchored at mid grey alone would lift them 0.5–2 stops over the
// curve's toe.
func checkHDRShadows(t *testing.T, base, pq image.Image, lum []float64) {
	t.Helper()
	w, h := base.Bounds().Dx(), base.Bounds().Dy()
	var gm, pqs []float64
	for y := range h {
		for x := range w {
			r, g, b, _ := base.At(x, y).RGBA()
			if hi := max(r, g, b) >> 8; hi < 16 || hi > 96 {
				continue
			}
			ysdr := 0.2126*colour.SRGBDecode(float64(r>>8)/255) + 0.7152*colour.SRGBDecode(float64(g>>8)/255) + 0.0722*colour.SRGBDecode(float64(b>>8)/255)
			pr, pg, pb, _ := pq.At(x, y).RGBA()
			ypq := (0.2627*colour.PQDecode(float64(pr)/65535) + 0.6780*colour.PQDecode(float64(pg)/65535) + 0.0593*colour.PQDecode(float64(pb)/65535)) / colour.HDRReferenceWhite
			gm = append(gm, math.Abs(math.Log2(max(lum[y*w+x], 1e-6)/ysdr)))
			pqs = append(pqs, math.Abs(math.Log2(max(ypq, 1e-6)/ysdr)))
		}
	}
	if len(gm) < 1000 {
		t.Fatalf("only %d shadow pixels: not a test of the shadows", len(gm))
	}
	sort.Float64s(gm)
	sort.Float64s(pqs)
	mg, mp := gm[len(gm)/2], pqs[len(pqs)/2]
	t.Logf("%d shadow pixels: median |log2(HDR/SDR)| gain map %.3f, PQ %.3f stop", len(gm), mg, mp)
	if mg > 0.1 || mp > 0.1 {
		t.Errorf("HDR shadows differ from the SDR base: median %.2f stop (gain map), %.2f stop (PQ); want ≤ 0.1", mg, mp)
	}
}

// TestUHDRChromium: headless Chromium decodes the Ultra HDR variant of a
// chart in a page at its size, a non-blank image with the JPEG variant's
// colours (chromiumShows: a screenshot is SDR, so Chromium shows the
// base, or the gain map's rendition at the weight of an SDR display, 0).
func TestUHDRChromium(t *testing.T) {
	dir := t.TempDir()
	in := writeChart(t, dir, bigChart(), 6, 0)
	var outs []OutputSpec
	for _, spec := range []string{"main=jpeg,size=240", "u=uhdr,size=240"} {
		v, err := ParseVariant(spec)
		if err != nil {
			t.Fatal(err)
		}
		outs = append(outs, OutputSpec{Variant: v, Path: filepath.Join(dir, "c"+v.Suffix())})
	}
	s := DefaultSettings()
	s.Lens = LensOff
	if _, err := ConvertVariants(context.Background(), in, outs, s, nil); err != nil {
		t.Fatal(err)
	}
	chromiumShows(t, outs[0].Path, outs[1].Path)
}

// TestUHDRPlan: an Ultra HDR variant is planned on the whole-image path
// (alone, and beside a JPEG it keeps the file's plan from streaming: it
// has its own rendition), its own tone step, and the plan's text shows
// its encoder's working memory (the encoded file held, 1 byte a pixel:
// more than 22 MiB at 24 MP; a base of more than 4 MP has the standard
// Huffman tables, so no whole-image coefficients).
func TestUHDRPlan(t *testing.T) {
	for _, vs := range [][]string{{"main=uhdr"}, {"main=jpeg", "u=uhdr"}} {
		p := PlanVariants(6000, 4000, variants(t, vs...), DefaultSettings())
		own := false
		for _, st := range p.Steps {
			if st.Stream {
				t.Errorf("%v: step %s marked streamed", vs, st.Name)
			}
			own = own || st.Stage == toneStage.Name && st.Variant == "u"
		}
		if len(vs) == 2 && !own {
			t.Errorf("%v: the uhdr variant has no tone step of its own:\n%s", vs, p)
		}
		v, _ := ParseVariant(vs[len(vs)-1])
		want := fmt.Sprintf("encoder %.0f MiB", float64(encoderBytes(v, 6000, 4000))/(1<<20))
		if s := p.String(); !strings.Contains(s, want) || encoderBytes(v, 6000, 4000) < 22<<20 {
			t.Errorf("%v: text form lacks %q (or the cost is too small for 24 MP):\n%s", vs, want, s)
		}
	}
}

// TestHDRCopyCost: an HDR variant of the decoded size renders from its
// own copy of the camera image (stageResize clones it): its resize step
// costs the copy (12 bytes a pixel) and no resampling's intermediate,
// which the estimate would otherwise hold until the variant's last step
// (canon_eos_6d.dng to Ultra HDR measured 0.85× its estimate with the
// Lanczos pass counted, 1.10× without; a 2.7 MP chart 0.68× → 0.89×:
// TestEstimateCalibrationWholeFrame). A downscaled variant keeps its
// intermediates.
func TestHDRCopyCost(t *testing.T) {
	fi := FileInfo{RawWidth: 3000, RawHeight: 2000, Width: 3000, Height: 2000, CFA: true}
	for _, c := range []struct {
		spec    string
		scratch bool
	}{{"main=uhdr", false}, {"main=avif,hdr=pq", false}, {"main=uhdr,size=1000", true}} {
		s := DefaultSettings()
		s.Variants = variants(t, c.spec)
		found := false
		for _, st := range EstimateMemory(fi, s, 1).Steps {
			if st.Step != resizeStage.Name {
				continue
			}
			found = true
			w, h := s.Variants[0].Fit(DecodedSize(fi, s))
			if px := 12 * int64(w) * int64(h); st.Alloc != px || (st.Scratch > 0) != c.scratch {
				t.Errorf("%s: resize step %+v; want Alloc %d and scratch %v", c.spec, st, px, c.scratch)
			}
		}
		if !found {
			t.Errorf("%s: no resize step", c.spec)
		}
	}
}
