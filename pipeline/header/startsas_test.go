package header

import "testing"

// TestStartsAs: the starts of the output formats, whole or cut short, are
// recognised from the one signature table; other bytes, another format's
// start and unknown formats are not.
func TestStartsAs(t *testing.T) {
	for _, c := range []struct {
		format, head string
		want         bool
	}{
		{"JPEG", "\xff\xd8\xff\xe0 rest", true},
		{"JPEG", "\xff\xd8", true}, // killed mid-write
		{"JPEG", "", true},
		{"JPEG", "\x89PNG", false},
		{"TIFF", "II*\x00\x08\x00", true},
		{"TIFF", "MM\x00*", true},
		{"TIFF", "MM", true},
		{"TIFF", "IIRO", false}, // an ORF is not a TIFF written by rawbatch
		{"PNG", "\x89PNG\r\n\x1a\n\x00", true},
		{"PNG", "\x89PNX", false},
		{"WEBP", "RIFF\x10\x00\x00\x00WEBPVP8 ", true},
		{"WEBP", "RIFF\x10\x00", true},
		{"WEBP", "RIFF\x10\x00\x00\x00WAVE", false},
		{"WEBP", "RIFX", false},
		{"NOSUCH", "", false},
		{"NOSUCH", "abc", false},
	} {
		if got := StartsAs(c.format, []byte(c.head)); got != c.want {
			t.Errorf("StartsAs(%q, %q) = %v, want %v", c.format, c.head, got, c.want)
		}
	}
}
