package pipeline

import (
	"context"
	"image"
	"image/color"
	"math"
	"path/filepath"
	"slices"
	"testing"

	"github.com/rawbatch/rawbatch/pipeline/synthdng"
)

// TestAnchorPreviewScaledDecode: a JPEG preview larger than the anchor
// needs is decoded at a DCT scale (a 2400-pixel preview at 1/2, for the
// 1024 pixels the 256-cell grid needs: previewCellPixels), and the anchor
// measured on it is within 0.03 EV of the one on the whole decode.
func TestAnchorPreviewScaledDecode(t *testing.T) {
	dir := t.TempDir()
	src := image.NewRGBA(image.Rect(0, 0, 300, 200))
	for y := range 200 {
		for x := range 300 {
			v := uint8(40 + x*150/300)
			c := color.RGBA{v, uint8(60 + y*120/200), uint8(200 - x*120/300), 255}
			if (x/50+y/50)%2 == 0 {
				c = color.RGBA{v / 2, v, 90, 255}
			}
			src.Set(x, y, c)
		}
	}
	sc, err := synthdng.NewRealScene(synthdng.PictureFromImage(src), 0, 2400, 1600)
	if err != nil {
		t.Fatal(err)
	}
	sp := sc.DNG()
	sp.Preview = sc.Preview(2400)
	in := filepath.Join(dir, "big-preview.dng")
	if err := synthdng.WriteFile(in, sp); err != nil {
		t.Fatal(err)
	}
	var denoms []int
	previewDecodeHook = func(d int) { denoms = append(denoms, d) }
	defer func() { previewDecodeHook, previewFullDecode = nil, false }()
	res, err := ConvertFile(context.Background(), in, filepath.Join(dir, "scaled.jpg"), DefaultSettings())
	if err != nil {
		t.Fatal(err)
	}
	previewFullDecode = true
	whole, err := ConvertFile(context.Background(), in, filepath.Join(dir, "whole.jpg"), DefaultSettings())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(denoms, []int{2, 1}) {
		t.Fatalf("decoded at 1/%v, want 1/2 then (whole) 1/1", denoms)
	}
	a, ok := anchorMeasured(res)
	b, ok2 := anchorMeasured(whole)
	if !ok || !ok2 {
		t.Fatalf("no anchor measured: %s; %s", res.Exposure.Source, whole.Exposure.Source)
	}
	t.Logf("anchor %+.3f EV from the scaled decode, %+.3f from the whole", a, b)
	if math.Abs(a-b) > 0.03 {
		t.Errorf("anchor %+.3f EV (%s), whole decode %+.3f (%s)", a, res.Exposure.Source, b, whole.Exposure.Source)
	}
}
