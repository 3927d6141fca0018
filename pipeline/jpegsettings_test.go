package pipeline

import (
	"slices"
	"strings"
	"testing"
)

// TestVariantSubsampling: a JPEG variant's subsampling comes from its
// spec, else from the command's default, else from its quality; Normal
// fills it in, only JPEG has one, and only a subsampling other than its
// quality's default adds to the settings hash.
func TestVariantSubsampling(t *testing.T) {
	for _, c := range []struct {
		spec, dflt, want string
	}{
		{"m=jpeg", "", "444"},
		{"m=jpeg,quality=89", "", "420"},
		{"m=jpeg,quality=89", "422", "422"},
		{"m=jpeg,subsampling=444,quality=50", "420", "444"},
		{"m=webp", "420", ""},
		{"m=png16", "422", ""},
	} {
		v, err := ParseVariantDefaults(c.spec, VariantDefaults{Subsampling: c.dflt})
		if err != nil || v.Subsampling != c.want {
			t.Errorf("%s with default %q: subsampling %q (%v), want %q", c.spec, c.dflt, v.Subsampling, err, c.want)
		}
	}
	for _, c := range []struct{ spec, msg string }{
		{"m=jpeg,subsampling=411", `subsampling="411": want auto (444 at quality 90 and above, 420 below), 444, 422 or 420`},
		{"m=webp,subsampling=444", "subsampling= is for jpeg, uhdr and avif, not webp"},
		{"m=jpeg,subsampling=444,subsampling=420", "subsampling given twice"},
	} {
		if _, err := ParseVariant(c.spec); err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: %v, want %q", c.spec, err, c.msg)
		}
	}
	if err := (Variant{Name: "a", Format: "png8", Space: "srgb", Subsampling: "420"}).Validate(); err == nil {
		t.Error("png8 with a subsampling validated")
	}

	v := func(spec string) Variant {
		x, err := ParseVariant(spec)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	if !slices.Equal(v("m=jpeg").hashParts(), v("m=jpeg,subsampling=444").hashParts()) {
		t.Error("explicit default subsampling hashes differently")
	}
	if slices.Equal(v("m=jpeg").hashParts(), v("m=jpeg,subsampling=420").hashParts()) {
		t.Error("subsampling 420 at quality 90 hashes like the default")
	}
	if !slices.Equal(v("m=jpeg,quality=80").hashParts(), v("m=jpeg,quality=80,subsampling=420").hashParts()) {
		t.Error("420 at quality 80 (its default) hashes differently")
	}

	s := DefaultSettings()
	s.JPEGSubsampling = "422"
	if vs := s.OutputVariants(); vs[0].Subsampling != "422" {
		t.Errorf("single output with --jpeg-subsampling 422: %q", vs[0].Subsampling)
	}
	if vs, _ := PresetDefaults("web", VariantDefaults{Subsampling: "420"}); vs[0].Subsampling != "420" || vs[1].Subsampling != "" {
		t.Errorf("web preset with 420: %+v", vs)
	}
	s.JPEGSubsampling = "4:2:0"
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "jpeg subsampling") {
		t.Errorf("settings with subsampling 4:2:0: %v", err)
	}
	for in, want := range map[string]string{"auto": "", "AUTO": "", "Auto": "", "444": "444", "420": "420"} {
		if got, err := ParseJPEGSubsampling(in); err != nil || got != want {
			t.Errorf("ParseJPEGSubsampling(%q) = %q, %v", in, got, err)
		}
	}
	for _, in := range []string{"", " ", "4:2:0", "411"} {
		if got, err := ParseJPEGSubsampling(in); err == nil {
			t.Errorf("ParseJPEGSubsampling(%q) = %q, want an error", in, got)
		}
	}
}

// TestVariantSubsamplingAuto: a variant's subsampling=auto (any case) is
// the default by the variant's own quality, even under another
// --jpeg-subsampling; an empty subsampling= is refused.
func TestVariantSubsamplingAuto(t *testing.T) {
	for spec, want := range map[string]string{
		"w=jpeg,quality=80,subsampling=auto": "420", "w=jpeg,quality=95,subsampling=AUTO": "444",
		"w=jpeg,quality=80": "422", "w=jpeg,subsampling=420": "420",
	} {
		v, err := ParseVariantDefaults(spec, VariantDefaults{Quality: 90, Subsampling: "422"})
		if err != nil {
			t.Errorf("%s: %v", spec, err)
			continue
		}
		if got := v.Normal().Subsampling; got != want {
			t.Errorf("%s under --jpeg-subsampling 422: subsampling %q, want %q", spec, got, want)
		}
	}
	if _, err := ParseVariantDefaults("w=jpeg,subsampling=", VariantDefaults{}); err == nil || !strings.Contains(err.Error(), "want auto") {
		t.Errorf("empty subsampling=: %v", err)
	}
}
