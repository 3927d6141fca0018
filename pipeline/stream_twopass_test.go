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
