package batch

import "testing"

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

func TestTakePath(t *testing.T) {
	f := walkFilter{exclude: []string{"old"}}
	for rel, want := range map[string]bool{
		"DCIM/IMG_1.CR3": true, "DCIM/._IMG_1.CR3": false, ".Trashes/501/IMG_1.CR3": false,
		"old/IMG_1.CR3": false, "DCIM/notes.txt": false, "@eaDir/IMG_1.CR3/SYNOPHOTO.dng": false,
		".Trash-1000/files/a.dng": false,
	} {
		if got := f.takePath(rel); got != want {
			t.Errorf("takePath(%q) = %v, want %v", rel, got, want)
		}
	}
}
