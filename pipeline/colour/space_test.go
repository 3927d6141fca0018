package colour

import (
	"math"
	"testing"
)

func matClose(t *testing.T, name string, got, want Mat3, tol float64) {
	t.Helper()
	for i := 0; i < 3; i++ {
		for j := 0; j < 3; j++ {
			if math.Abs(got[i][j]-want[i][j]) > tol {
				t.Errorf("%s[%d][%d] = %.7f, want %.7f (±%g)\n got  %v\n want %v", name, i, j, got[i][j], want[i][j], tol, got, want)
				return
			}
		}
	}
}

func vecClose(t *testing.T, name string, got, want [3]float64, tol float64) {
	t.Helper()
	for i := range got {
		if math.Abs(got[i]-want[i]) > tol {
			t.Errorf("%s = %v, want %v (±%g)", name, got, want, tol)
			return
		}
	}
}

func TestMat3(t *testing.T) {
	a := Mat3{{2, 0, 1}, {1, 3, 0}, {0, 1, 4}}
	b := Mat3{{1, 2, 0}, {0, 1, 0}, {1, 0, 1}}
	// Hand-computed product a·b.
	matClose(t, "a·b", a.Mul(b), Mat3{{3, 4, 1}, {1, 5, 0}, {4, 1, 4}}, 0)
	vecClose(t, "a·v", a.Apply([3]float64{1, 2, 3}), [3]float64{5, 7, 14}, 0)
	// Apply composes like Mul: (a·b)v = a(bv).
	v := [3]float64{0.3, -1.2, 2.5}
	vecClose(t, "(ab)v", a.Mul(b).Apply(v), a.Apply(b.Apply(v)), 1e-12)
	if d := a.Det(); d != 25 {
		t.Errorf("det = %v, want 25", d)
	}
	inv, ok := a.Inverse()
	if !ok {
		t.Fatal("a reported singular")
	}
	matClose(t, "a·a⁻¹", a.Mul(inv), Identity3, 1e-12)
	matClose(t, "a⁻¹·a", inv.Mul(a), Identity3, 1e-12)
	if _, ok := (Mat3{{1, 2, 3}, {2, 4, 6}, {0, 1, 1}}).Inverse(); ok {
		t.Error("singular matrix inverted")
	}
	if _, ok := (Mat3{}).Inverse(); ok {
		t.Error("zero matrix inverted")
	}
	matClose(t, "transpose", a.Transpose().Transpose(), a, 0)
}

func TestSRGBMatrix(t *testing.T) {
	// sRGB white (1,1,1) maps to D65: (0.9505, 1, 1.0890) (IEC 61966-2-1).
	vecClose(t, "sRGB white", SRGB.ToXYZ.Apply([3]float64{1, 1, 1}), [3]float64{0.9505, 1, 1.0890}, 1e-4)
	vecClose(t, "SRGB.White", SRGB.White, [3]float64{0.9505, 1, 1.0890}, 1e-4)
	// IEC 61966-2-1:1999, 4-decimal RGB→XYZ matrix.
	matClose(t, "sRGB→XYZ", SRGB.ToXYZ, Mat3{
		{0.4124, 0.3576, 0.1805},
		{0.2126, 0.7152, 0.0722},
		{0.0193, 0.1192, 0.9505},
	}, 1e-4)
	matClose(t, "sRGB XYZ round trip", SRGB.FromXYZ.Mul(SRGB.ToXYZ), Identity3, 1e-12)
}

func TestPublishedMatrices(t *testing.T) {
	// Adobe RGB (1998) Color Image Encoding, normalised matrix (5 decimals).
	matClose(t, "AdobeRGB→XYZ", AdobeRGB.ToXYZ, Mat3{
		{0.57667, 0.18556, 0.18823},
		{0.29734, 0.62736, 0.07529},
		{0.02703, 0.07069, 0.99134},
	}, 1e-4)
	// Luminance rows = the luma coefficients of ITU-R BT.709-6 (sRGB
	// primaries) and BT.2020-2 Table 4.
	vecClose(t, "sRGB Y row", SRGB.ToXYZ[1], [3]float64{0.2126, 0.7152, 0.0722}, 1e-4)
	vecClose(t, "Rec2020 Y row", Rec2020.ToXYZ[1], [3]float64{0.2627, 0.6780, 0.0593}, 1e-4)
	// Display P3 → XYZ as published by Apple/W3C CSS Color 4 (4 decimals).
	matClose(t, "DisplayP3→XYZ", DisplayP3.ToXYZ, Mat3{
		{0.4866, 0.2657, 0.1982},
		{0.2290, 0.6917, 0.0793},
		{0.0000, 0.0451, 1.0439},
	}, 1e-4)
	// ROMM RGB → XYZ(D50), ISO 22028-2 / Lindbloom (D50 from xy 0.3457, 0.3585).
	matClose(t, "ProPhoto→XYZ", ProPhoto.ToXYZ, Mat3{
		{0.7977, 0.1352, 0.0313},
		{0.2880, 0.7119, 0.0001},
		{0.0000, 0.0000, 0.8251},
	}, 1e-4)
	vecClose(t, "ProPhoto white", ProPhoto.White, [3]float64{0.9643, 1, 0.8251}, 1e-4)
}

func TestConvertSRGBToRec2020(t *testing.T) {
	// ITU-R BT.2087-0 (BT.709 → BT.2020 linear RGB, both D65).
	matClose(t, "BT.709→BT.2020", ConvertMatrix(SRGB, Rec2020), Mat3{
		{0.6274, 0.3293, 0.0433},
		{0.0691, 0.9195, 0.0114},
		{0.0164, 0.0880, 0.8956},
	}, 1e-4)
}

func TestBradford(t *testing.T) {
	// B. Lindbloom, "Chromatic Adaptation Matrices": Bradford D65 → D50 with
	// D65 = (0.95047, 1, 1.08883), D50 = (0.96422, 1, 0.82521).
	d65 := [3]float64{0.95047, 1, 1.08883}
	d50 := [3]float64{0.96422, 1, 0.82521}
	matClose(t, "Bradford D65→D50", Bradford(d65, d50), Mat3{
		{1.0478112, 0.0228866, -0.0501270},
		{0.0295424, 0.9904844, -0.0170491},
		{-0.0092345, 0.0150436, 0.7521316},
	}, 1e-6)
	matClose(t, "Bradford D50→D65", Bradford(d50, d65), Mat3{
		{0.9555766, -0.0230393, 0.0631636},
		{-0.0282895, 1.0099416, 0.0210077},
		{0.0122982, -0.0204830, 1.3299098},
	}, 1e-6)
	vecClose(t, "adapted white", Bradford(WhiteD65, WhiteD50).Apply(WhiteD65), WhiteD50, 1e-12)
	matClose(t, "Bradford same white", Bradford(d65, d65), Identity3, 0)
}

func TestConvertMatrixProperties(t *testing.T) {
	white := [3]float64{1, 1, 1}
	for _, a := range Spaces() {
		matClose(t, a.Name+" self", ConvertMatrix(a, a), Identity3, 1e-12)
		matClose(t, a.Name+" To·From", a.ToXYZ.Mul(a.FromXYZ), Identity3, 1e-12)
		vecClose(t, a.Name+" white→XYZ", a.ToXYZ.Apply(white), a.White, 1e-12)
		if math.Abs(a.White[1]-1) > 1e-15 {
			t.Errorf("%s white Y = %v", a.Name, a.White[1])
		}
		for _, b := range Spaces() {
			m := ConvertMatrix(a, b)
			// Bradford maps white to white, so neutral stays neutral.
			vecClose(t, a.Name+"→"+b.Name+" white", m.Apply(white), white, 1e-12)
			matClose(t, a.Name+"→"+b.Name+"→back", ConvertMatrix(b, a).Mul(m), Identity3, 1e-12)
		}
	}
	// A D65→D50 conversion really adapts: without Bradford the white would
	// not land on (1,1,1).
	noAdapt := ProPhoto.FromXYZ.Mul(SRGB.ToXYZ).Apply(white)
	if math.Abs(noAdapt[2]-1) < 0.1 {
		t.Errorf("test premise: unadapted sRGB white in ProPhoto = %v", noAdapt)
	}
	// sRGB primaries lie inside ProPhoto: all coefficients non-negative.
	m := ConvertMatrix(SRGB, ProPhoto)
	for i := range m {
		for j := range m[i] {
			if m[i][j] < -1e-9 {
				t.Errorf("sRGB→ProPhoto has negative entry %v", m)
			}
		}
	}
}

func TestRGBToXYZMatrixDegenerate(t *testing.T) {
	if _, ok := RGBToXYZMatrix([3]Chromaticity{{0.3, 0.3}, {0.4, 0.4}, {0.5, 0.5}}, D65XY); ok {
		t.Error("collinear primaries accepted")
	}
}
