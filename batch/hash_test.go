package batch

import (
	"math"
	"testing"

	"github.com/rawbatch/rawbatch/pipeline"
)

// Specs that write the same file hash equal; others do not.
func TestVariantSizeHash(t *testing.T) {
	h := func(spec string) string {
		v, err := pipeline.ParseVariant(spec)
		if err != nil {
			t.Fatalf("%s: %v", spec, err)
		}
		return outputHash("base", v)
	}
	for _, same := range [][2]string{
		{"a=jpeg,size=1024", "a=jpeg,size=1024x1024"},
		{"a=jpeg", "a=jpeg,size=100%"},
		{"a=jpeg", "a=jpeg,size=250%"},
		{"a=jpeg", "a=jpeg,upscale=true"},
		{"a=jpeg", "a=jpeg,upscale=false"},
		{"a=jpeg,size=1024", "a=jpeg,size=1024,upscale=false"},
		{"a=jpeg,size=50%", "a=jpeg,size=50.0%"},
	} {
		if h(same[0]) != h(same[1]) {
			t.Errorf("%s and %s hash differently", same[0], same[1])
		}
	}
	for _, diff := range [][2]string{
		{"a=jpeg,size=1024", "a=jpeg,size=1024x"},
		{"a=jpeg,size=1024", "a=jpeg,size=1024,upscale=true"},
		{"a=jpeg,size=1024x768", "a=jpeg,size=768x1024"},
		{"a=jpeg,size=50%", "a=jpeg,size=25%"},
		{"a=jpeg", "a=jpeg,size=250%,upscale=true"},
	} {
		if h(diff[0]) == h(diff[1]) {
			t.Errorf("%s and %s hash equal", diff[0], diff[1])
		}
	}
	// A long edge hashes as before box sizes existed.
	v, _ := pipeline.ParseVariant("a=jpeg,size=1024")
	if len(v.HashParts()) != 0 {
		t.Errorf("long edge adds hash parts %v", v.HashParts())
	}
}

// TestEquivalentVariantsHashEqual: specs that write the same file give the
// same per-output settings hash (no needless re-convert), and specs that
// differ give different hashes.
func TestEquivalentVariantsHashEqual(t *testing.T) {
	base := SettingsHash(pipeline.DefaultSettings())
	hash := func(s pipeline.Settings) string {
		t.Helper()
		if err := s.Validate(); err != nil {
			t.Fatal(err)
		}
		vs := s.OutputVariants()
		if len(vs) != 1 {
			t.Fatalf("%d variants", len(vs))
		}
		return outputHash(base, vs[0])
	}
	spec := func(specs ...string) pipeline.Settings {
		t.Helper()
		s := pipeline.DefaultSettings()
		for _, sp := range specs {
			v, err := pipeline.ParseVariant(sp)
			if err != nil {
				t.Fatal(err)
			}
			s.Variants = append(s.Variants, v)
		}
		return s
	}
	png := pipeline.DefaultSettings()
	png.Format = pipeline.PNG16
	raw := func(v pipeline.Variant) pipeline.Settings { // a Variant built by hand, not parsed
		s := pipeline.DefaultSettings()
		s.Variants = []pipeline.Variant{v}
		return s
	}
	equal := [][]pipeline.Settings{
		{pipeline.DefaultSettings(), spec("main=jpeg"), spec("main=jpeg,quality=90"), spec("main=JPEG,space=sRGB"),
			spec("main=jpeg,sharpen=0"), spec("main=jpeg,sharpen=-0"), raw(pipeline.Variant{Name: "main", Format: "jpeg", Space: "srgb"}),
			raw(pipeline.Variant{Name: "main", Format: "jpeg", Space: "srgb", Size: -1, Sharpen: math.Copysign(0, -1)})},
		{spec("t=webp,size=512"), spec("t=webp,size=512,quality=90"), spec("t=webp,quality=90,size=512")},
		{png, spec("main=png16"), spec("main=png16,quality=50"), raw(pipeline.Variant{Name: "main", Format: "png16", Quality: 90, Space: "srgb"})},
		{spec("p=tiff16"), spec("p=tiff16,quality=1")},
		{spec("p=png8"), spec("p=png8,quality=100")},
	}
	seen := map[string]int{}
	for i, group := range equal {
		want := hash(group[0])
		for _, s := range group[1:] {
			if got := hash(s); got != want {
				t.Errorf("group %d: %+v hashes differently from %+v", i, s.OutputVariants()[0], group[0].OutputVariants()[0])
			}
		}
		if other, ok := seen[want]; ok {
			t.Errorf("groups %d and %d hash equal", other, i)
		}
		seen[want] = i
	}
	// Each of these differs from main=jpeg in one setting that changes
	// the file.
	for _, sp := range []string{"main=jpeg,quality=89", "main=jpeg,size=2048", "main=jpeg,space=displayp3",
		"main=jpeg,sharpen=0.5", "main=webp", "other=jpeg"} {
		h := hash(spec(sp))
		if other, ok := seen[h]; ok {
			t.Errorf("%s hashes as group %d", sp, other)
		}
		seen[h] = -1
	}
}
