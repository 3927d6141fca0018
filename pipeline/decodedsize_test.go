package pipeline

import (
	"path/filepath"
	"testing"

	"github.com/rawbatch/rawbatch/pipeline/encode"
)

// TestHalfSizeAgrees: for a CFA and a non-CFA file at half size, the
// written image, the stage cache's entry size, the format limits and the
// dry run's size all follow DecodedSize, and the estimate counts the image
// LibRaw really copies (halved for CFA only).
func TestHalfSizeAgrees(t *testing.T) {
	for _, tc := range []struct {
		file string
		cfa  bool
	}{
		{"canond30_CRW.CRW", true},
		{"adobesdk_05_PGTM2_unsigned8.dng", false},
	} {
		t.Run(tc.file, func(t *testing.T) {
			in := filepath.Join(testdata, "raw", tc.file)
			fi, err := ReadInfo(in)
			if err != nil {
				t.Fatal(err)
			}
			if fi.CFA != tc.cfa {
				t.Fatalf("CFA = %v, want %v", fi.CFA, tc.cfa)
			}
			s := DefaultSettings()
			s.HalfSize = true
			s.Crop = CropSensor // the visible area; --crop camera: TestCropHalfSizeEstimate
			w, h := DecodedSize(fi, s)
			if w != (fi.Width+1)/2 || h != (fi.Height+1)/2 {
				t.Errorf("DecodedSize %d×%d of %d×%d", w, h, fi.Width, fi.Height)
			}
			_, res := convert(t, in, t.TempDir(), s)
			if res.Width*res.Height != w*h {
				t.Errorf("written %d×%d, DecodedSize %d×%d", res.Width, res.Height, w, h)
			}
			if got, want := CacheEntryBytes(fi, s), 96+6*int64(w)*int64(h); got != want {
				t.Errorf("cache entry %d bytes, want %d", got, want)
			}
			b := EstimateMemory(fi, s, 1)
			copied := int64(fi.Width) * int64(fi.Height) // LibRaw ignores half_size for non-CFA data
			if tc.cfa {
				copied = int64(w) * int64(h)
			}
			if d := stepMemory(b, "demosaic"); d.Alloc != 12*copied {
				t.Errorf("estimate's float image %d bytes, want %d", d.Alloc, 12*copied)
			}
			// The WebP limit applies to the halved size.
			long := &fi.Width
			if fi.Height > fi.Width {
				long = &fi.Height
			}
			ws := s
			ws.Variants = []Variant{{Name: "w", Format: "webp"}}
			*long = 2 * encode.MaxWebPSide
			if err := CheckOutputLimits(in, fi, ws); err != nil {
				t.Errorf("decoded side %d: %v", encode.MaxWebPSide, err)
			}
			*long = 2*encode.MaxWebPSide + 2
			if err := CheckOutputLimits(in, fi, ws); err == nil {
				t.Errorf("decoded side %d passed the WebP limit", encode.MaxWebPSide+1)
			}
		})
	}
}
