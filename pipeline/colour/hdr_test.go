package colour

import (
	"math"
	"testing"
)

// PQ and HLG: the reference points of BT.2100 / BT.2408 and round trips.
func TestHDRTransfer(t *testing.T) {
	// BT.2408-7 Table 1: 203 cd/m² is PQ signal 0.58 (58 %), and HLG 75 %
	// on a 1000 cd/m² display; PQ 10000 → 1, 0 → 0 (7.3e-7 by the formula).
	if v := PQEncode(203); math.Abs(v-0.5807) > 0.001 {
		t.Errorf("PQEncode(203) = %.4f, want 0.5807", v)
	}
	if v := PQEncode(10000); math.Abs(v-1) > 1e-9 {
		t.Errorf("PQEncode(10000) = %v", v)
	}
	if v := HLGEncode([3]float64{203, 203, 203}); math.Abs(v[0]-0.75) > 0.005 {
		t.Errorf("HLGEncode(203 nits grey) = %.4f, want 0.75", v[0])
	}
	for _, n := range []float64{0.01, 1, 50, 203, 1000, 4000, 10000} {
		if back := PQDecode(PQEncode(n)); math.Abs(back-n) > 1e-6*n+1e-9 {
			t.Errorf("PQ round trip of %g nits: %g", n, back)
		}
	}
	for _, rgb := range [][3]float64{{203, 203, 203}, {600, 300, 50}, {10, 20, 5}, {1000, 1000, 1000}} {
		back := HLGDecode(HLGEncode(rgb))
		for i := range rgb {
			if math.Abs(back[i]-rgb[i]) > 1e-6*rgb[i]+1e-9 {
				t.Errorf("HLG round trip of %v: %v", rgb, back)
				break
			}
		}
	}
}
