package pipeline

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// An output name of up to 255 bytes (NAME_MAX) converts: its temporary
// file gets a name that fits, and RemoveTemps finds leftovers of it
// (issue 9.32, the temporary name part).
func TestLongOutputNameTemp(t *testing.T) {
	dir := t.TempDir()
	in := writeChart(t, dir, testChart(), 1, 0)
	for _, stem := range []string{
		strings.Repeat("a", 250),             // 254 bytes with ".jpg"
		strings.Repeat("é", 125),             // 250 bytes of 2-byte characters
		strings.Repeat("b", 240) + "-photo1", // differs from the next only at the end
		strings.Repeat("b", 240) + "-photo2",
	} {
		out := filepath.Join(dir, stem+".jpg")
		outs := []OutputSpec{{Variant: Variant{Name: "main", Format: "jpeg", Quality: 90, Space: "srgb"}, Path: out}}
		if _, err := ConvertVariants(context.Background(), in, outs, referenceSettings(), nil); err != nil {
			t.Fatalf("%d-byte output name: %v", len(filepath.Base(out)), err)
		}
		if _, err := os.Stat(out); err != nil {
			t.Fatal(err)
		}
		pat := tempPattern(out)
		if n := len(pat) - 1 + 10; n > maxNameBytes || !utf8.ValidString(pat) {
			t.Errorf("temporary names of %q: up to %d bytes, valid UTF-8 %v", filepath.Base(out), n, utf8.ValidString(pat))
		}
		// A leftover of a killed run is found again for this output only.
		f, err := os.CreateTemp(dir, pat)
		if err != nil {
			t.Fatalf("temporary file for a %d-byte name: %v", len(filepath.Base(out)), err)
		}
		f.Close()
		if n := RemoveTemps(out); n != 1 {
			t.Errorf("RemoveTemps removed %d, want 1", n)
		}
	}
	if tempStem(filepath.Join(dir, strings.Repeat("b", 240)+"-photo1.jpg")) == tempStem(filepath.Join(dir, strings.Repeat("b", 240)+"-photo2.jpg")) {
		t.Error("two long names share a temporary stem")
	}
	if s := tempStem("/x/IMG_1.jpg"); s != "IMG_1.jpg" {
		t.Errorf("short name shortened to %q", s)
	}
}
