package colour

import (
	"math"
	"testing"
)

// sharmaData is Table 1 of G. Sharma, W. Wu, E. N. Dalal, "The CIEDE2000
// color-difference formula: Implementation notes, supplementary test data,
// and mathematical observations", Color Res. Appl. 30(1):21–30, 2005:
// L1 a1 b1, L2 a2 b2, ΔE00 (4 decimals).
var sharmaData = [34][7]float64{
	{50.0000, 2.6772, -79.7751, 50.0000, 0.0000, -82.7485, 2.0425},
	{50.0000, 3.1571, -77.2803, 50.0000, 0.0000, -82.7485, 2.8615},
	{50.0000, 2.8361, -74.0200, 50.0000, 0.0000, -82.7485, 3.4412},
	{50.0000, -1.3802, -84.2814, 50.0000, 0.0000, -82.7485, 1.0000},
	{50.0000, -1.1848, -84.8006, 50.0000, 0.0000, -82.7485, 1.0000},
	{50.0000, -0.9009, -85.5211, 50.0000, 0.0000, -82.7485, 1.0000},
	{50.0000, 0.0000, 0.0000, 50.0000, -1.0000, 2.0000, 2.3669},
	{50.0000, -1.0000, 2.0000, 50.0000, 0.0000, 0.0000, 2.3669},
	{50.0000, 2.4900, -0.0010, 50.0000, -2.4900, 0.0009, 7.1792},
	{50.0000, 2.4900, -0.0010, 50.0000, -2.4900, 0.0010, 7.1792},
	{50.0000, 2.4900, -0.0010, 50.0000, -2.4900, 0.0011, 7.2195},
	{50.0000, 2.4900, -0.0010, 50.0000, -2.4900, 0.0012, 7.2195},
	{50.0000, -0.0010, 2.4900, 50.0000, 0.0009, -2.4900, 4.8045},
	{50.0000, -0.0010, 2.4900, 50.0000, 0.0010, -2.4900, 4.8045},
	{50.0000, -0.0010, 2.4900, 50.0000, 0.0011, -2.4900, 4.7461},
	{50.0000, 2.5000, 0.0000, 50.0000, 0.0000, -2.5000, 4.3065},
	{50.0000, 2.5000, 0.0000, 73.0000, 25.0000, -18.0000, 27.1492},
	{50.0000, 2.5000, 0.0000, 61.0000, -5.0000, 29.0000, 22.8977},
	{50.0000, 2.5000, 0.0000, 56.0000, -27.0000, -3.0000, 31.9030},
	{50.0000, 2.5000, 0.0000, 58.0000, 24.0000, 15.0000, 19.4535},
	{50.0000, 2.5000, 0.0000, 50.0000, 3.1736, 0.5854, 1.0000},
	{50.0000, 2.5000, 0.0000, 50.0000, 3.2972, 0.0000, 1.0000},
	{50.0000, 2.5000, 0.0000, 50.0000, 1.8634, 0.5757, 1.0000},
	{50.0000, 2.5000, 0.0000, 50.0000, 3.2592, 0.3350, 1.0000},
	{60.2574, -34.0099, 36.2677, 60.4626, -34.1751, 39.4387, 1.2644},
	{63.0109, -31.0961, -5.8663, 62.8187, -29.7946, -4.0864, 1.2630},
	{61.2901, 3.7196, -5.3901, 61.4292, 2.2480, -4.9620, 1.8731},
	{35.0831, -44.1164, 3.7933, 35.0232, -40.0716, 1.5901, 1.8645},
	{22.7233, 20.0904, -46.6940, 23.0331, 14.9730, -42.5619, 2.0373},
	{36.4612, 47.8580, 18.3852, 36.2715, 50.5065, 21.2231, 1.4146},
	{90.8027, -2.0831, 1.4410, 91.1528, -1.6435, 0.0447, 1.4441},
	{90.9257, -0.5406, -0.9208, 88.6381, -0.8985, -0.7239, 1.5381},
	{6.7747, -0.2908, -2.4247, 5.8714, -0.0985, -2.2286, 0.6377},
	{2.0776, 0.0795, -1.1350, 0.9033, -0.0636, -0.5514, 0.9082},
}

func TestDeltaE2000Sharma(t *testing.T) {
	for i, r := range sharmaData {
		a := Lab{r[0], r[1], r[2]}
		b := Lab{r[3], r[4], r[5]}
		got := DeltaE2000(a, b)
		// The table is rounded to 4 decimals: the exact value is within 5e-5.
		if math.Abs(got-r[6]) > 1e-4 {
			t.Errorf("pair %d: DeltaE2000(%v, %v) = %.6f, want %.4f", i+1, a, b, got, r[6])
		}
		if rev := DeltaE2000(b, a); math.Abs(rev-got) > 1e-12 {
			t.Errorf("pair %d: not symmetric: %.12f vs %.12f", i+1, got, rev)
		}
	}
}

func TestDeltaE2000Basics(t *testing.T) {
	a := Lab{50, 10, -20}
	if d := DeltaE2000(a, a); d != 0 {
		t.Errorf("identical colours: ΔE00 = %v, want 0", d)
	}
	// Pure lightness difference at L̄ = 50: S_L = 1, so ΔE00 = |ΔL|.
	if d := DeltaE2000(Lab{49, 0, 0}, Lab{51, 0, 0}); math.Abs(d-2) > 1e-12 {
		t.Errorf("ΔL=2 at L=50: ΔE00 = %v, want 2", d)
	}
	// kL scales the lightness term.
	if d := DeltaE2000K(Lab{49, 0, 0}, Lab{51, 0, 0}, 2, 1, 1); math.Abs(d-1) > 1e-12 {
		t.Errorf("kL=2: ΔE00 = %v, want 1", d)
	}
	if d := DeltaE76(Lab{0, 0, 0}, Lab{1, 2, 2}); d != 3 {
		t.Errorf("DeltaE76 = %v, want 3", d)
	}
}

func TestXYZToLab(t *testing.T) {
	w := WhiteD65
	if lab := XYZToLab(w, w); math.Abs(lab[0]-100) > 1e-12 || math.Abs(lab[1]) > 1e-12 || math.Abs(lab[2]) > 1e-12 {
		t.Errorf("white → %v, want (100, 0, 0)", lab)
	}
	if lab := XYZToLab([3]float64{}, w); math.Abs(lab[0]) > 1e-12 {
		t.Errorf("black → %v, want L = 0", lab)
	}
	// Y/Yn = 0.18 → L* = 116·0.18^(1/3) − 16 = 49.4961...
	if lab := XYZToLab([3]float64{0.18 * w[0], 0.18, 0.18 * w[2]}, w); math.Abs(lab[0]-49.49610) > 1e-4 {
		t.Errorf("18%% grey L* = %v, want 49.4961", lab[0])
	}
	// Both branches of f meet at t = (6/29)³: L* = 8.
	if lab := XYZToLab([3]float64{0, labEps, 0}, [3]float64{1, 1, 1}); math.Abs(lab[0]-8) > 1e-12 {
		t.Errorf("L* at ε = %v, want 8", lab[0])
	}
	for _, xyz := range [][3]float64{{0.2, 0.3, 0.4}, {0.001, 0.002, 0.0005}, {0.9, 0.8, 1.2}, {0.004, 0.5, 0.003}} {
		back := LabToXYZ(XYZToLab(xyz, w), w)
		for i := range xyz {
			if math.Abs(back[i]-xyz[i]) > 1e-12 {
				t.Errorf("Lab round trip %v → %v", xyz, back)
			}
		}
	}
}

func TestSRGBToLab(t *testing.T) {
	// Widely published values (D65 reference white, Y = 100 scale), e.g.
	// B. Lindbloom's calculator and colormine.org: sRGB red = (53.2408,
	// 80.0925, 67.2032), mid grey 128 = L* 53.585.
	cases := []struct {
		r, g, b uint8
		want    Lab
	}{
		{255, 0, 0, Lab{53.2408, 80.0925, 67.2032}},
		{0, 255, 0, Lab{87.7347, -86.1827, 83.1793}},
		{0, 0, 255, Lab{32.2970, 79.1875, -107.8602}},
		{255, 255, 255, Lab{100, 0, 0}},
		{128, 128, 128, Lab{53.5850, 0, 0}},
	}
	for _, c := range cases {
		got := SRGB8ToLab(c.r, c.g, c.b)
		if DeltaE76(got, c.want) > 0.02 {
			t.Errorf("SRGB8ToLab(%d,%d,%d) = %v, want %v", c.r, c.g, c.b, got, c.want)
		}
		got16 := SRGB16ToLab(uint16(c.r)*257, uint16(c.g)*257, uint16(c.b)*257)
		if DeltaE76(got16, got) > 1e-9 {
			t.Errorf("SRGB16ToLab disagrees with SRGB8ToLab: %v vs %v", got16, got)
		}
	}
	if l := SRGB.LinearToLab([3]float64{1, 1, 1}); math.Abs(l[0]-100) > 1e-9 || math.Abs(l[1]) > 1e-9 || math.Abs(l[2]) > 1e-9 {
		t.Errorf("LinearToLab(white) = %v", l)
	}
}
