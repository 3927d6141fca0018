package bytetext

import "testing"

func TestEscape(t *testing.T) {
	for in, want := range map[string]string{
		"":              "",
		"lat\u00e9.dng": "lat\u00e9.dng",
		"lat\xe9.dng":   `lat\xe9.dng`,
		"\xff\xfe":      `\xff\xfe`,
		"a\xc3":         `a\xc3`, // a UTF-8 sequence cut short
		`a\x41`:         `a\x41`, // already looks escaped: kept as it is
	} {
		if got := Escape(in); got != want {
			t.Errorf("Escape(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestClean: control characters (C0, DEL, C1) are written as Go escapes
// and bytes that are not UTF-8 as \xNN; other text is kept.
func TestClean(t *testing.T) {
	for in, want := range map[string]string{
		"IMG_1.dng":          "IMG_1.dng",
		"esc\x1b[31mred.dng": `esc\x1b[31mred.dng`,
		"two\nlines":         `two\nlines`,
		"del\x7f":            `del\x7f`,
		"c1\u0085":           `c1\u0085`,
		"bad\xff.dng":        `bad\xff.dng`,
		"é":                  "é",
	} {
		if got := Clean(in); got != want {
			t.Errorf("Clean(%q) = %q, want %q", in, got, want)
		}
	}
}
