package main

import "testing"

func TestCleanEscapesControlCharacters(t *testing.T) {
	for in, want := range map[string]string{
		"plain/path.dng: ok":       "plain/path.dng: ok",
		"evil\x1b[2J.dng":          `evil\x1b[2J.dng`,
		"two\nlines.dng":           `two\nlines.dng`,
		"Grüße/写真.dng":             "Grüße/写真.dng",
		"bad\xffutf8.dng":          `bad\xffutf8.dng`,
		"tab\there.dng and \u009b": `tab\there.dng and \u009b`,
	} {
		if got := clean(in); got != want {
			t.Errorf("clean(%q) = %q, want %q", in, got, want)
		}
	}
}
