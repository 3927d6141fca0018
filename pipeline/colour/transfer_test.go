package colour

import (
	"math"
	"testing"
)

type tf struct {
	name     string
	enc, dec func(float64) float64
	linBreak float64 // linear-domain break point (0 = pure power)
}

var transferFuncs = []tf{
	{"sRGB", SRGBEncode, SRGBDecode, srgbLinBreak},
	{"AdobeRGB", AdobeRGBEncode, AdobeRGBDecode, 0},
	{"ProPhoto", ProPhotoEncode, ProPhotoDecode, rommEt},
	{"Rec2020", Rec2020Encode, Rec2020Decode, bt2020Beta},
}

func TestTransferRoundTrip(t *testing.T) {
	for _, f := range transferFuncs {
		if f.enc(0) != 0 || math.Abs(f.enc(1)-1) > 1e-12 || math.Abs(f.dec(1)-1) > 1e-12 {
			t.Errorf("%s: enc(0)=%v enc(1)=%v dec(1)=%v", f.name, f.enc(0), f.enc(1), f.dec(1))
		}
		prev := math.Inf(-1)
		for i := -1000; i <= 2000; i++ {
			x := float64(i) / 1000
			e := f.enc(x)
			if e <= prev {
				t.Errorf("%s: encode not increasing at %v", f.name, x)
			}
			prev = e
			if back := f.dec(e); math.Abs(back-x) > 1e-12*math.Max(1, math.Abs(x)) {
				t.Errorf("%s: dec(enc(%v)) = %v", f.name, x, back)
			}
			if back := f.enc(f.dec(x)); math.Abs(back-x) > 1e-12*math.Max(1, math.Abs(x)) {
				t.Errorf("%s: enc(dec(%v)) = %v", f.name, x, back)
			}
		}
		// Fine round trip in the shadows, where the linear segments live.
		for x := 1e-7; x < 0.05; x *= 1.01 {
			if back := f.dec(f.enc(x)); math.Abs(back-x) > 1e-12 {
				t.Errorf("%s: dec(enc(%g)) = %g", f.name, x, back)
			}
		}
	}
}

func TestTransferContinuity(t *testing.T) {
	for _, f := range transferFuncs {
		if f.linBreak == 0 {
			continue
		}
		b := f.linBreak
		lo, hi := f.enc(math.Nextafter(b, 0)), f.enc(math.Nextafter(b, 1))
		if math.Abs(hi-lo) > 1e-7 {
			t.Errorf("%s encode jumps at %v: %v → %v", f.name, b, lo, hi)
		}
		eb := f.enc(b)
		dlo, dhi := f.dec(math.Nextafter(eb, 0)), f.dec(math.Nextafter(eb, 1))
		if math.Abs(dhi-dlo) > 1e-8 {
			t.Errorf("%s decode jumps at %v: %v → %v", f.name, eb, dlo, dhi)
		}
	}
	// Published break values.
	if e := SRGBEncode(0.0031308); math.Abs(e-0.04045) > 1e-6 {
		t.Errorf("sRGB encoded break = %v, want 0.04045", e)
	}
	if e := ProPhotoEncode(1.0 / 512); math.Abs(e-1.0/32) > 1e-15 {
		t.Errorf("ROMM encoded break = %v, want 1/32", e)
	}
	if e := Rec2020Encode(bt2020Beta); math.Abs(e-4.5*bt2020Beta) > 1e-9 {
		t.Errorf("BT.2020 encoded break = %v, want %v", e, 4.5*bt2020Beta)
	}
}

func TestTransferKnownValues(t *testing.T) {
	cases := []struct {
		name      string
		f         func(float64) float64
		in, want  float64
		tolerance float64
	}{
		{"sRGB encode 0.18", SRGBEncode, 0.18, 0.461356129, 1e-8},
		{"sRGB decode 0.5", SRGBDecode, 0.5, 0.214041140, 1e-8},
		{"sRGB decode 0.02", SRGBDecode, 0.02, 0.02 / 12.92, 1e-15},
		{"Adobe decode 0.5", AdobeRGBDecode, 0.5, math.Pow(0.5, 2.19921875), 1e-15},
		{"ROMM encode 0.18", ProPhotoEncode, 0.18, math.Pow(0.18, 1/1.8), 1e-15},
		{"ROMM encode 0.001", ProPhotoEncode, 0.001, 0.016, 1e-15},
		{"BT.2020 encode 0.01", Rec2020Encode, 0.01, 0.045, 1e-15},
		{"BT.2020 encode 0.18", Rec2020Encode, 0.18, 1.09929682680944*math.Pow(0.18, 0.45) - 0.09929682680944, 1e-15},
		{"sRGB encode −0.18", SRGBEncode, -0.18, -0.461356129, 1e-8},
	}
	for _, c := range cases {
		if got := c.f(c.in); math.Abs(got-c.want) > c.tolerance {
			t.Errorf("%s = %.10f, want %.10f", c.name, got, c.want)
		}
	}
	if SRGBEncode32(0.18) != float32(SRGBEncode(0.18)) || SRGBDecode32(0.5) != float32(SRGBDecode(0.5)) {
		t.Error("float32 variants disagree with float64")
	}
	if !math.IsNaN(SRGBEncode(math.NaN())) {
		t.Error("NaN not propagated")
	}
	// DisplayP3 uses the sRGB curve.
	if DisplayP3.Encode(0.3) != SRGB.Encode(0.3) {
		t.Error("Display P3 curve differs from sRGB")
	}
}
