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
