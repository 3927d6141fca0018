package pipeline

import (
	"strings"
	"testing"
)

func TestParseVariant(t *testing.T) {
	v, err := ParseVariant("thumb=webp,size=512,quality=80,space=displayp3,sharpen=0.5")
	if err != nil {
		t.Fatal(err)
	}
	want := Variant{Name: "thumb", Format: "webp", Size: 512, Quality: 80, Space: "displayp3", Sharpen: 0.5}
	if v != want {
		t.Fatalf("got %+v, want %+v", v, want)
	}
	if v.Suffix() != ".thumb.webp" {
		t.Errorf("suffix %q", v.Suffix())
	}
	m, err := ParseVariant("main=tiff16,space=prophoto")
	if err != nil || m.Suffix() != ".tif" || m.Size != 0 {
		t.Errorf("main: %+v %v", m, err)
	}
	for _, bad := range []string{"", "x", "=jpeg", "a=gif", "a=jpeg,size=-1", "a=jpeg,size=big", "a=jpeg,space=cmyk",
		"a=jpeg,quality=101", "a=jpeg,colour=1", "a b=jpeg", "a=jpeg,sharpen=nan", "a=jpeg,size"} {
		if _, err := ParseVariant(bad); err == nil {
			t.Errorf("ParseVariant(%q) accepted", bad)
		}
	}
}

// TestParseVariantRejects: values that make no sense are refused as the
// variant is parsed, with a hint, rather than taken silently or failing
// only after every file was decoded.
func TestParseVariantRejects(t *testing.T) {
	long := strings.Repeat("n", MaxVariantName+1)
	for _, c := range []struct{ spec, want string }{
		{"a=jpeg,quality=0", "leave quality out for the default, 90"},
		{"a=jpeg,quality=-5", "out of range 1..100"},
		{"a=webp,quality=101", "out of range 1..100"},
		{"a=jpeg,size=0", "leave size out for the full size"},
		{"a=jpeg,size=-1", "want a long edge of 1..65535 pixels"},
		// Not "(0: full size)": size=0 is refused.
		{"a=jpeg,size=65536", "size=65536: want a long edge of 1..65535 pixels (leave size out for the full size)"},
		{"a=jpeg,size=100,size=200", "size given twice"},
		{"a=jpeg,quality=80,Quality=70", "quality given twice"},
		{"a=jpeg,space=srgb,space=prophoto", "space given twice"},
		{long + "=jpeg", "at most 32"},
		{"a.b=jpeg", "use letters, digits"},
		{"a=uhdr,gainmap-scale=0", "gainmap-scale=0 out of range 1..16"},
		{"a=uhdr,gainmap-scale=17", "gainmap-scale=17 out of range 1..16"},
	} {
		_, err := ParseVariant(c.spec)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseVariant(%q): %v, want an error containing %q", c.spec, err, c.want)
		}
	}
	if err := (Variant{Name: "a", Format: "jpeg", Space: "srgb", Size: 70000}).Validate(); err == nil || strings.Contains(err.Error(), "0: full size") || !strings.Contains(err.Error(), "leave size out for the full size") {
		t.Errorf("Validate of size 70000: %v", err)
	}
	ok := strings.Repeat("N", MaxVariantName)
	if v, err := ParseVariant(ok + "=jpeg,size=1,quality=1"); err != nil || v.Name != ok || v.Size != 1 || v.Quality != 1 {
		t.Errorf("limits: %+v %v", v, err)
	}
	if v, err := ParseVariant("a-b_C9=jpeg,quality=100,size=65535"); err != nil || v.Quality != 100 || v.Size != 65535 {
		t.Errorf("limits: %+v %v", v, err)
	}
}

// TestParseVariantQuality: the default quality applies to lossy variants
// that give none; a variant's own quality= wins.
func TestParseVariantQuality(t *testing.T) {
	for _, c := range []struct {
		spec    string
		def     int
		quality int
	}{
		{"main=jpeg", 0, DefaultQuality},
		{"main=jpeg", 50, 50},
		{"main=jpeg,quality=70", 50, 70},
		{"t=webp", 40, 40},
		{"p=png16", 50, 0},
		{"p=tiff16,quality=50", 0, 0},
	} {
		v, err := ParseVariantQuality(c.spec, c.def)
		if err != nil || v.Quality != c.quality {
			t.Errorf("ParseVariantQuality(%q, %d): quality %d (%v), want %d", c.spec, c.def, v.Quality, err, c.quality)
		}
	}
	web, err := Preset("web", 70)
	if err != nil || web[0].Quality != 70 || web[1].Quality != 70 || web[1].Size != 512 {
		t.Errorf("Preset(web, 70): %+v %v", web, err)
	}
	if web, _ := Preset("web", 0); web[0].Quality != 90 || web[1].Quality != 80 {
		t.Errorf("Preset(web, 0): %+v", web)
	}
	if pr, _ := Preset("print", 70); pr[0].Quality != 0 {
		t.Errorf("Preset(print, 70): %+v", pr)
	}
	if _, err := Preset("webb", 0); err == nil || !strings.Contains(err.Error(), "web, print or archive") {
		t.Errorf("Preset(webb): %v", err)
	}
}

func TestPresetsAndCheckVariants(t *testing.T) {
	for name, vs := range Presets {
		if err := CheckVariants(vs); err != nil {
			t.Errorf("preset %s: %v", name, err)
		}
		if vs[0].Name != "main" {
			t.Errorf("preset %s has no main variant first", name)
		}
	}
	if Presets["web"][1].Suffix() != ".thumb.webp" || Presets["print"][0].Space != "adobergb" || Presets["archive"][0].Space != "prophoto" {
		t.Errorf("presets %+v", Presets)
	}
	dup := []Variant{{Name: "a", Format: "jpeg", Space: "srgb"}, {Name: "a", Format: "png8", Space: "srgb"}}
	if err := CheckVariants(dup); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("duplicate names: %v", err)
	}
	clash := []Variant{{Name: "main", Format: "png8", Space: "srgb"}, {Name: "main2", Format: "png16", Space: "srgb"}}
	if err := CheckVariants(clash); err != nil {
		t.Errorf("distinct names: %v", err)
	}
	caseOnly := []Variant{{Name: "a", Format: "jpeg", Space: "srgb"}, {Name: "A", Format: "png8", Space: "srgb"}}
	if err := CheckVariants(caseOnly); err == nil || !strings.Contains(err.Error(), "differ only in case") {
		t.Errorf("names a and A: %v", err)
	}
	long := []Variant{{Name: strings.Repeat("x", 260), Format: "jpeg", Space: "srgb"}}
	if err := CheckVariants(long); err == nil || !strings.Contains(err.Error(), "at most 32") {
		t.Errorf("260-character name: %v", err)
	}
}

// TestParseVariantLenient: "jpg" is jpeg (as for --format) and spaces
// around keys and values are ignored.
func TestParseVariantLenient(t *testing.T) {
	a, err := ParseVariant("thumb=jpg, size = 512 ,quality=80")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := ParseVariant("thumb=jpeg,size=512,quality=80")
	if a != b {
		t.Errorf("%+v != %+v", a, b)
	}
}
