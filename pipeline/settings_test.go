package pipeline

import "testing"

// TestOutputVariantsNormal: OutputVariants returns Normal variants (the
// form that is hashed for the up-to-date records) without changing
// Settings.Variants.
func TestOutputVariantsNormal(t *testing.T) {
	s := DefaultSettings()
	s.Variants = []Variant{
		{Name: "main", Format: "jpeg", Space: "srgb"},
		{Name: "t", Format: "tiff16", Quality: 50, Size: -3, Space: "srgb"},
	}
	got := s.OutputVariants()
	want := []Variant{
		{Name: "main", Format: "jpeg", Quality: DefaultQuality, Subsampling: "444", Space: "srgb"},
		{Name: "t", Format: "tiff16", Space: "srgb"},
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("variant %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if s.Variants[0].Quality != 0 || s.Variants[1].Quality != 50 {
		t.Errorf("Settings.Variants changed: %+v", s.Variants)
	}

	d := DefaultSettings()
	d.Quality = 50
	if v := d.OutputVariants(); len(v) != 1 || v[0] != (Variant{Name: "main", Format: "jpeg", Quality: 50, Subsampling: "420", Space: "srgb"}) {
		t.Errorf("default jpeg: %+v", v)
	}
	d.Format = PNG16
	if v := d.OutputVariants(); len(v) != 1 || v[0] != (Variant{Name: "main", Format: "png16", Space: "srgb"}) {
		t.Errorf("default png16: %+v", v)
	}
}
