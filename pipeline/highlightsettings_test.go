package pipeline

import "testing"

// TestHighlightSettings: --white-level and --highlights parse, the zero
// value means the defaults, both enter the stage cache key (they change the
// cached image), and LibRaw's own highlight mode (Settings.Highlight) is
// refused, so it cannot fight the highlights stage.
func TestHighlightSettings(t *testing.T) {
	for _, c := range []struct {
		in   string
		want WhiteLevelMode
	}{{"data", WhiteLevelData}, {"LibRaw", WhiteLevelLibRaw}} {
		if got, err := ParseWhiteLevel(c.in); err != nil || got != c.want {
			t.Errorf("ParseWhiteLevel(%q) = %q, %v", c.in, got, err)
		}
	}
	if _, err := ParseWhiteLevel("max"); err == nil {
		t.Error("ParseWhiteLevel(max): no error")
	}
	if got, err := ParseHighlights("Clip"); err != nil || got != HighlightsClip {
		t.Errorf("ParseHighlights(Clip) = %q, %v", got, err)
	}
	if _, err := ParseHighlights("blend"); err == nil {
		t.Error("ParseHighlights(blend): no error")
	}
	d := DefaultSettings()
	zero := d
	zero.WhiteLevel, zero.Highlights = "", ""
	if CacheKey("xxh3:1", d) != CacheKey("xxh3:1", zero) {
		t.Error("the zero white level and highlight mode key differently from the defaults")
	}
	keys := map[string]string{"default": CacheKey("xxh3:1", d)}
	s := d
	s.WhiteLevel = WhiteLevelLibRaw
	keys["libraw"] = CacheKey("xxh3:1", s)
	s = d
	s.Highlights = HighlightsClip
	keys["clip"] = CacheKey("xxh3:1", s)
	seen := map[string]string{}
	for name, k := range keys {
		if other, ok := seen[k]; ok {
			t.Errorf("%s and %s have one cache key", name, other)
		}
		seen[k] = name
	}
	s = d
	s.Highlight = 2
	if err := s.Validate(); err == nil {
		t.Error("LibRaw highlight mode 2 accepted")
	}
	s = d
	s.Highlights = "blend"
	if err := s.Validate(); err == nil {
		t.Error("highlight mode blend accepted")
	}
}
