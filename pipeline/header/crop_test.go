package header

import (
	"path/filepath"
	"testing"
)

// TestPictureAreaFields: the facts the crop stage chooses from (docs/crop.md):
// the D30 CRW's Canon SensorInfo borders (exiftool: SensorLeftBorder 56,
// SensorTopBorder 12, SensorRightBorder 2215, SensorBottomBorder 1451) and
// LibRaw's visible area (left_margin 48, top_margin 6, 2176×1448); the 550D
// DNG's visible area is its ActiveArea (top 26, left 152) and its
// DefaultCrop the whole of it.
func TestPictureAreaFields(t *testing.T) {
	for _, tc := range []struct {
		file                     string
		sensor, visible, defCrop [4]int
	}{
		{"canond30_CRW.CRW", [4]int{56, 12, 2160, 1440}, [4]int{48, 6, 2176, 1448}, [4]int{}},
		{"canon550d_colorchart.dng", [4]int{}, [4]int{152, 26, 1734, 1156}, [4]int{0, 0, 1734, 1156}},
	} {
		h, err := Read(filepath.Join("..", "..", "testdata", "raw", tc.file))
		if err != nil {
			t.Fatal(err)
		}
		if h.SensorArea != tc.sensor || h.VisibleArea != tc.visible || h.DefaultCrop != tc.defCrop {
			t.Errorf("%s: SensorArea %v VisibleArea %v DefaultCrop %v, want %v %v %v", tc.file, h.SensorArea, h.VisibleArea, h.DefaultCrop, tc.sensor, tc.visible, tc.defCrop)
		}
		// LibRaw's inset crop, where it has one, is inside its visible area.
		if ic, v := h.InsetCrop, h.VisibleArea; ic[2] > 0 && (ic[0] < v[0] || ic[1] < v[1] || ic[0]+ic[2] > v[0]+v[2] || ic[1]+ic[3] > v[1]+v[3]) {
			t.Errorf("%s: InsetCrop %v outside VisibleArea %v", tc.file, ic, v)
		}
	}
}
