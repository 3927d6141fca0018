package pipeline

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestLensKeepsPreviewAligned: with the lens corrected (the 6D's EF
// 24-105 at 65 mm: distortion, TCA, scale 1.023), the preview's score grid
// that the exposure anchor compares (Preview.Cells) goes through the same
// geometry as the camera image, so the anchor stays consistent. With the
// grid left as decoded it is not (IQR 0.74 EV, over the 0.5 limit).
func TestLensKeepsPreviewAligned(t *testing.T) {
	in := filepath.Join(testdata, "raw", "canon_eos_6d.dng")
	s := DefaultSettings()
	s.Format = PNG16
	res, err := ConvertFile(context.Background(), in, filepath.Join(t.TempDir(), "o.png"), s)
	if err != nil {
		t.Fatal(err)
	}
	if res.Lens == nil || !strings.Contains(res.Lens.Corrections, "distortion") {
		t.Fatalf("the 6D's lens was not corrected: %+v", res.Lens)
	}
	if !strings.Contains(res.Exposure.Source, "consistent true") {
		t.Errorf("preview anchor with the lens corrected: %s", res.Exposure.Source)
	}
}
