package pipeline

import (
	"math"
	"path/filepath"
	"strings"
	"testing"
)

// TestStreamTwoPass: a file with an embedded preview (the exposure anchor
// or --look camera measures the whole camera image) streams in two passes
// (stream_twopass.go) to within one code value of the whole-image path,
// in every orientation (TIFF16 compared at 8 bits: a JPEG's DCT spreads
// a code's rounding over its block), with the same exposure (the anchor's or the
// camera look's EV within 0.01 EV, the same terms).
func TestStreamTwoPass(t *testing.T) {
	dir := t.TempDir()
	raw := func(name string) string { return filepath.Join(testdata, "raw", name) }
	camera := DefaultSettings()
	camera.Look = LookCamera
	for _, c := range []struct {
		name, in string
		s        Settings
		specs    []string
	}{
		{"synthetic-o1", writeClipped(t, dir, 320, 240, 1, true), DefaultSettings(), []string{"main=tiff16"}},
		{"synthetic-o6-crop", writeClipped(t, dir, 320, 240, 6, true, true), DefaultSettings(), []string{"main=tiff16"}},
		{"synthetic-o3-camera", writeClipped(t, dir, 320, 240, 3, true), camera, []string{"main=tiff16"}},
		{"d30", raw("canond30_CRW.CRW"), DefaultSettings(), []string{"main=tiff16"}},
		{"d30-camera", raw("canond30_CRW.CRW"), camera, []string{"main=tiff16"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, res := convertOpts(t, c.in, dir, c.name+"/stream", c.s, ConvertOptions{}, c.specs...)
			want, whole := convertOpts(t, c.in, dir, c.name+"/whole", c.s, ConvertOptions{wholeImage: true}, c.specs...)
			if !res.Streamed || whole.Streamed {
				t.Fatalf("streamed %v, whole-image run streamed %v", res.Streamed, whole.Streamed)
			}
			if !strings.Contains(whole.Exposure.Source, ", preview anchor ") && !strings.Contains(whole.Exposure.Source, ", camera look ") {
				t.Fatalf("whole-image run's exposure %q measured no preview", whole.Exposure.Source)
			}
			if d := math.Abs(res.Exposure.EV - whole.Exposure.EV); d > 0.01 {
				t.Errorf("exposure %+.4f EV (%s), whole-image path %+.4f (%s)", res.Exposure.EV, res.Exposure.Source, whole.Exposure.EV, whole.Exposure.Source)
			}
			if terms(res.Exposure.Source) != terms(whole.Exposure.Source) {
				t.Errorf("exposure terms %q, whole-image path %q", res.Exposure.Source, whole.Exposure.Source)
			}
			if d := maxCodeDiff(decodeImage(t, got[0]), decodeImage(t, want[0]), 8); d < 0 || d > 1 {
				t.Errorf("differs from the whole-image path by %d code values", d)
			}
		})
	}
}

// terms is an exposure source without its numbers in parentheses: what
// was applied and from what.
func terms(src string) string {
	if i := strings.Index(src, "("); i >= 0 {
		return src[:i]
	}
	return src
}

// TestStreamTwoPassReleases: pass 2 lets the stored bands go as the
// encoder is done with them (all but the last before the last is read),
// and the output is the same as when they are all kept.
func TestStreamTwoPassReleases(t *testing.T) {
	dir := t.TempDir()
	in := writeClipped(t, dir, 700, 520, 1, true)
	freed, bands := 0, 0
	twoPassReleaseHook = func(f, n int) { freed, bands = f, n }
	got, res := convertOpts(t, in, dir, "stream", DefaultSettings(), ConvertOptions{}, "main=jpeg")
	twoPassReleaseHook = nil
	if !res.Streamed || bands != (520+streamRows-1)/streamRows || freed != bands-1 {
		t.Fatalf("streamed %v: %d of %d stored bands let go, want all but the last of %d", res.Streamed, freed, bands, (520+streamRows-1)/streamRows)
	}
	want, _ := convertOpts(t, in, dir, "tiff", DefaultSettings(), ConvertOptions{}, "main=tiff16")
	a, b := decodeImage(t, got[0]), decodeImage(t, want[0])
	if a.Bounds() != b.Bounds() {
		t.Fatalf("JPEG %v, TIFF16 %v", a.Bounds(), b.Bounds())
	}
	var sum float64
	for y := range a.Bounds().Dy() {
		for x := range a.Bounds().Dx() {
			r1, g1, b1, _ := a.At(x, y).RGBA()
			r2, g2, b2, _ := b.At(x, y).RGBA()
			sum += math.Abs(float64(r1)-float64(r2)) + math.Abs(float64(g1)-float64(g2)) + math.Abs(float64(b1)-float64(b2))
		}
	}
	if mean := sum / 257 / float64(3*a.Bounds().Dx()*a.Bounds().Dy()); mean > 1 {
		t.Errorf("JPEG differs from the TIFF16 by %.2f code values on average", mean)
	}
}
