package pipeline

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/rawbatch/rawbatch/pipeline/synthdng"
)

// An output name of up to 255 bytes (NAME_MAX) converts: its temporary
// file gets a name that fits, and RemoveTemps finds leftovers of it
// (the temporary name part).
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
		name := filepath.Base(NewTempName(out))
		if n := len(name); n > maxNameBytes || n != len(longestTempName(out)) || !utf8.ValidString(name) {
			t.Errorf("temporary names of %q: %d bytes, valid UTF-8 %v", filepath.Base(out), n, utf8.ValidString(name))
		}
		// A leftover of a killed run is found again for this output only.
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o600); err != nil {
			t.Fatalf("temporary file for a %d-byte name: %v", len(filepath.Base(out)), err)
		}
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

// TestIsTempName: only the names CreateTemp makes are temporary outputs,
// shortened ones included, and only content rawbatch writes is removed.
func TestIsTempName(t *testing.T) {
	long := strings.Repeat("é", 120) + ".thumb.webp"
	made := func(out string) string { return filepath.Base(NewTempName("/x/" + out)) }
	forged := made("IMG_1.jpg")
	if forged[len(forged)-1] == '0' {
		forged = forged[:len(forged)-1] + "1"
	} else {
		forged = forged[:len(forged)-1] + "0"
	}
	for name, want := range map[string]bool{
		made("IMG_1.jpg"):        true,
		made("IMG_1.thumb.webp"): true,
		made("report.json"):      true,
		made(long):               true,
		made("notes.txt"):        false,
		made(".jpg"):             false,
		forged:                   false, // the check does not match
		// Names a user could give a file: what os.CreateTemp made
		// before tokens, or any other suffix.
		TempPrefix + "IMG_1.jpg.123":                               false,
		TempPrefix + "IMG_1.thumb.webp.4294967295":                 false,
		TempPrefix + "IMG_1.jpg.0123456789abcdef01234567":          false,
		TempPrefix + "IMG_1.jpg.":                                  false,
		TempPrefix + "x~0123456789abcdef.0123456789abcdef01234567": false,
	} {
		if got := isTempName(name); got != want {
			t.Errorf("isTempName(%q) = %v, want %v", name, got, want)
		}
	}
	for _, c := range []struct {
		ext, head string
		want      bool
	}{
		{".jpg", "", true}, {".jpg", "\xff\xd8\xff\xe0", true}, {".jpg", "\xff", true},
		{".jpg", "II*\x00", false}, {".tif", "MM\x00*", true}, {".png", "\x89PNG\r\n\x1a\n", true},
		{".png", "hello", false}, {".webp", "RIFF\x10\x00\x00\x00WEBP", true},
		{".webp", "RIFF\x10\x00\x00\x00WAVE", false}, {".json", "{\n", true}, {"", "II*\x00", true},
		{"", "text", false},
	} {
		if got := hasTempSignature(c.ext, []byte(c.head)); got != c.want {
			t.Errorf("hasTempSignature(%q, %q) = %v, want %v", c.ext, c.head, got, c.want)
		}
	}
}

// TestRemoveStaleTempOnlyOwn: the cleaner removes a leftover rawbatch named
// and marked (or left empty), and keeps a user's look-alikes: JPEG content
// under an old-style name, or under a verified name without rawbatch's
// mark (a copy of a leftover saved by another program).
func TestRemoveStaleTempOnlyOwn(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "IMG_1.jpg")
	jpeg := []byte("\xff\xd8\xff\xe0 partial")
	write := func(name string, data []byte, mark bool) string {
		if err := os.WriteFile(name, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if mark {
			MarkTemp(name)
		}
		return name
	}
	own := write(NewTempName(out), jpeg, true)
	empty := write(NewTempName(out), nil, false)
	oldStyle := write(filepath.Join(dir, TempPrefix+"IMG_1.jpg.123"), jpeg, false)
	for _, c := range []struct {
		path string
		want bool
	}{{own, true}, {empty, true}, {oldStyle, false}} {
		if _, got := RemoveStaleTemp(c.path); got != c.want {
			t.Errorf("RemoveStaleTemp(%s) = %v, want %v", filepath.Base(c.path), got, c.want)
		}
	}
	unmarked := write(NewTempName(out), jpeg, false)
	if err := unix.Setxattr(unmarked, tempMarkAttr, []byte("x"), 0); errors.Is(err, unix.ENOTSUP) {
		t.Skip("no user extended attributes here: the name and content are the marks")
	}
	unix.Removexattr(unmarked, tempMarkAttr)
	if _, got := RemoveStaleTemp(unmarked); got {
		t.Errorf("removed %s, which rawbatch did not mark", filepath.Base(unmarked))
	}
}

// An output renamed into place no longer carries the temporary's mark: a
// copy of it made with its attributes (cp -a) under a temporary's name is
// not taken for one of rawbatch's leftovers.
func TestOutputLosesTempMark(t *testing.T) {
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.dng"), filepath.Join(dir, "out.jpg")
	if err := synthdng.WriteFile(in, synthdng.Spec{Width: 48, Height: 32, BlackLevel: 512, WhiteLevel: 16383,
		Scene: func(x, y, c int) float64 { return 0.3 }}); err != nil {
		t.Fatal(err)
	}
	if _, err := ConvertFile(context.Background(), in, out, DefaultSettings()); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	if n, err := unix.Getxattr(out, tempMarkAttr, buf); err == nil {
		t.Errorf("the output carries %s = %q", tempMarkAttr, buf[:n])
	}
}
