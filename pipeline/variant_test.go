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
}
