package pipeline

import (
	"strings"
	"testing"
)

// Every size= form gives the size it documents, never larger than the
// image unless upscale=true.
func TestVariantSizes(t *testing.T) {
	for _, c := range []struct {
		spec   string
		w, h   int // full size
		dw, dh int
	}{
		{"a=jpeg", 6000, 4000, 6000, 4000},
		{"a=jpeg,size=2048", 6000, 4000, 2048, 1365},
		{"a=jpeg,size=2048", 4000, 6000, 1365, 2048},
		{"a=jpeg,size=1600x1200", 6000, 4000, 1600, 1067}, // width-limited
		{"a=jpeg,size=1600x1000", 6000, 4000, 1500, 1000}, // height-limited
		{"a=jpeg,size=1600X1000", 4000, 6000, 667, 1000},
		{"a=jpeg,size=1600x", 6000, 4000, 1600, 1067},
		{"a=jpeg,size=1600x", 4000, 6000, 1600, 2400},
		{"a=jpeg,size=x1000", 6000, 4000, 1500, 1000},
		{"a=jpeg,size=50%", 6001, 4001, 3001, 2001},
		{"a=jpeg,size=12.5%", 6000, 4000, 750, 500},
		{"a=jpeg,size=1%", 50, 30, 1, 1},
		// Never upscaled unless asked.
		{"a=jpeg,size=8000", 6000, 4000, 6000, 4000},
		{"a=jpeg,size=8000x8000", 6000, 4000, 6000, 4000},
		{"a=jpeg,size=x5000", 6000, 4000, 6000, 4000},
		{"a=jpeg,size=200%", 6000, 4000, 6000, 4000},
		{"a=jpeg,size=8000,upscale=true", 6000, 4000, 8000, 5333},
		{"a=jpeg,size=x5000,upscale=true", 6000, 4000, 7500, 5000},
		{"a=jpeg,size=200%,upscale=true", 48, 32, 96, 64},
		{"a=jpeg,size=1000,upscale=true", 6000, 4000, 1000, 667}, // upscale=true still shrinks
		{"a=jpeg,upscale=true", 48, 32, 48, 32},
	} {
		v, err := ParseVariant(c.spec)
		if err != nil {
			t.Errorf("%s: %v", c.spec, err)
			continue
		}
		if dw, dh := v.Fit(c.w, c.h); dw != c.dw || dh != c.dh {
			t.Errorf("%s on %dx%d: %dx%d, want %dx%d", c.spec, c.w, c.h, dw, dh, c.dw, c.dh)
		}
	}
}

func TestVariantSizeErrors(t *testing.T) {
	for _, c := range []struct{ spec, want string }{
		{"a=jpeg,size=x", "no width or height"},
		{"a=jpeg,size=0x100", "not a side of 1..65535"},
		{"a=jpeg,size=100x70000", "not a side of 1..65535"},
		{"a=jpeg,size=0%", "percentage of more than 0"},
		{"a=jpeg,size=2000%", "at most 1000"},
		{"a=jpeg,size=abc%", "percentage"},
		{"a=jpeg,size=10,upscale=maybe", "want true or false"},
	} {
		_, err := ParseVariant(c.spec)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseVariant(%q): %v, want an error containing %q", c.spec, err, c.want)
		}
	}
	if err := (Variant{Name: "a", Format: "jpeg", Space: "srgb", Size: 10, Width: 5}).Validate(); err == nil {
		t.Error("a long edge and a box both accepted")
	}
}

// The estimate counts an upscaled variant's larger image, also when it is
// the last variant; a box or percentage shrinks it like a long edge.
func TestEstimateVariantSizes(t *testing.T) {
	fi := FileInfo{RawWidth: 6000, RawHeight: 4000, Width: 6000, Height: 4000, CFA: true}
	est := func(specs ...string) int64 {
		s := DefaultSettings()
		for _, spec := range specs {
			v, err := ParseVariant(spec)
			if err != nil {
				t.Fatal(err)
			}
			s.Variants = append(s.Variants, v)
		}
		return EstimateMemory(fi, s, 1).Total
	}
	full := est("a=jpeg")
	if up := est("a=jpeg,size=200%,upscale=true"); up <= full {
		t.Errorf("upscaled ×2: %d bytes, full size %d", up, full)
	}
	if up := est("b=jpeg", "a=jpeg,size=12000,upscale=true"); up <= est("b=jpeg", "a=jpeg") {
		t.Errorf("upscaled last variant of two: %d bytes", up)
	}
	if box, long := est("a=jpeg", "b=jpeg,size=1600x1200"), est("a=jpeg", "b=jpeg,size=1600"); box != long {
		t.Errorf("box 1600x1200 %d bytes, long edge 1600 %d", box, long)
	}
}
