package batch

import (
	"os"
	"path/filepath"
	"testing"
)

func TestMatchGlob(t *testing.T) {
	for _, c := range []struct {
		pattern, rel string
		want         bool
	}{
		{"*.CR3", "DCIM/100CANON/IMG_1.cr3", true}, // base name, case-insensitive
		{"*.CR3", "DCIM/100CANON/IMG_1.dng", false},
		{"DCIM/*/IMG_*.CR3", "DCIM/100CANON/IMG_1.CR3", true},
		{"DCIM/*.CR3", "DCIM/100CANON/IMG_1.CR3", false}, // * stops at /
		{"**/rejects/**", "a/b/rejects/x.dng", true},
		{"**/rejects/**", "rejects/x.dng", true}, // ** may be no folder
		{"**/rejects/**", "a/rejected/x.dng", false},
		{"rejects", "a/rejects", true}, // a folder's name
		{"/a/*", "a/x.dng", true},
		{"/a/*", "b/a/x.dng", false},
		{"/x.dng", "b/x.dng", false}, // anchored: not the base name
		{"/x.dng", "x.dng", true},
		{"DCIM/*", "DCIM/top.dng", true},
		{"DCIM/*", "x/DCIM/C.dng", true}, // unanchored: at any depth
		{"/DCIM/*", "x/DCIM/C.dng", false},
		{"/DCIM/*", "DCIM/top.dng", true},
		{"x/DCIM", "card/x/DCIM", true}, // whole segments only
		{"x/DCIM", "card/ax/DCIM", false},
		{"DCIM/*", "DCIM/100CANON/IMG_1.dng", false},
		{"IMG_?.dng", "IMG_12.dng", false},
		{"IMG_[0-9]*.dng", "IMG_12.dng", true},
		{"[a", "[a", false}, // invalid: matches nothing
	} {
		if got := MatchGlob(c.pattern, c.rel); got != c.want {
			t.Errorf("MatchGlob(%q, %q) = %v, want %v", c.pattern, c.rel, got, c.want)
		}
	}
	if CheckGlob("[a") == nil || CheckGlob("") == nil || CheckGlob("**/x/*.dng") != nil {
		t.Error("CheckGlob does not tell bad globs from good ones")
	}
}

// A listed file is taken as named: whatever its extension, and an
// AppleDouble name or a system folder on its way does not skip it (a walk
// skips those); the globs still apply.
func TestTakeListed(t *testing.T) {
	f := walkFilter{exclude: []string{"old"}}
	for rel, want := range map[string]bool{
		"DCIM/IMG_1.CR3": true, "DCIM/._IMG_1.CR3": true, ".Trashes/501/IMG_1.CR3": true,
		"old/IMG_1.CR3": false, "DCIM/notes.txt": true, "ext/photo.bin": true, "old/photo.bin": false, "@eaDir/IMG_1.CR3/SYNOPHOTO.dng": true,
		".Trash-1000/files/a.dng": true, "DCIM/old/a.dng": false,
	} {
		if got := f.takeListed(rel); got != want {
			t.Errorf("takeListed(%q) = %v, want %v", rel, got, want)
		}
	}
	inc := walkFilter{include: []string{"IMG_*"}}
	if inc.takeListed("DCIM/x.dng") || !inc.takeListed(".Trashes/IMG_2.dng") {
		t.Error("takeListed does not apply --include")
	}
}

// Only a file that begins as AppleDouble files do is one.
func TestIsAppleDoubleFile(t *testing.T) {
	dir := t.TempDir()
	ad, raw := filepath.Join(dir, "._a.dng"), filepath.Join(dir, "._b.dng")
	if err := os.WriteFile(ad, append([]byte{0, 5, 0x16, 7, 0, 2, 0, 0}, "Mac OS X"...), 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(raw, []byte("II*\x00\x08\x00\x00\x00"), 0o666); err != nil {
		t.Fatal(err)
	}
	if !isAppleDoubleFile(ad) || isAppleDoubleFile(raw) || isAppleDoubleFile(filepath.Join(dir, "missing")) {
		t.Error("isAppleDoubleFile does not tell AppleDouble content")
	}
}
