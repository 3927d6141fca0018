package batch

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/rawbatch/rawbatch/pipeline/header"
)

// systemDirs are folders that operating systems and NAS firmware create on
// cards and shares, holding deleted files, indexes or thumbnails rather than
// photographs (compared case-insensitively). A walk never enters them.
var systemDirs = map[string]bool{
	".trashes": true, ".trash": true, ".spotlight-v100": true, ".fseventsd": true, // macOS
	".temporaryitems": true, ".documentrevisions-v100": true, ".appledouble": true, // macOS, netatalk
	".appledb": true, ".appledesktop": true, "network trash folder": true, "temporary items": true,
	"$recycle.bin": true, "system volume information": true, "recycler": true, "recycled": true, // Windows
	"@eadir": true, "#recycle": true, "#snapshot": true, // Synology
	"@recycle": true, ".@__thumb": true, // QNAP
	".recycle": true, ".snapshot": true, // Samba's recycle module, NetApp
}

// IsSystemDir reports whether a folder named name is one that a walk skips:
// an operating system's or NAS's trash, index or thumbnail folder
// (.Trashes, .Spotlight-V100, .fseventsd, .TemporaryItems, $RECYCLE.BIN,
// System Volume Information, @eaDir, #recycle, ...), or a desktop trash
// .Trash-UID; compared case-insensitively.
func IsSystemDir(name string) bool {
	l := strings.ToLower(name)
	return systemDirs[l] || strings.HasPrefix(l, ".trash-")
}

// IsAppleDouble reports whether a file named name is a macOS AppleDouble
// file ("._IMG_1.CR3", the resource fork and attributes macOS writes next
// to each file on FAT, exFAT and SMB volumes): a few KiB of metadata, never
// a photograph, whatever its extension.
func IsAppleDouble(name string) bool { return strings.HasPrefix(name, "._") }

// appleDoubleMagic is the first four bytes of an AppleDouble file (RFC 1740
// §6: magic number 0x00051607, big-endian).
var appleDoubleMagic = []byte{0x00, 0x05, 0x16, 0x07}

// isAppleDoubleFile reports whether the file at path begins as an
// AppleDouble file does (appleDoubleMagic): macOS metadata whatever its
// name, never a photograph. A file that cannot be read is not one (its
// conversion then says why).
func isAppleDoubleFile(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	b := make([]byte, len(appleDoubleMagic))
	if _, err := io.ReadFull(f, b); err != nil {
		return false
	}
	return bytes.Equal(b, appleDoubleMagic)
}

// CheckGlob returns an error naming pattern when it is not a valid glob
// (MatchGlob): an unclosed '[' or a trailing '\'.
func CheckGlob(pattern string) error {
	if strings.TrimLeft(pattern, "/") == "" {
		return fmt.Errorf("glob %q is empty", pattern)
	}
	for _, seg := range strings.Split(strings.TrimLeft(pattern, "/"), "/") {
		if _, err := path.Match(seg, ""); err != nil {
			return fmt.Errorf("glob %q: %w", pattern, err)
		}
	}
	return nil
}

// MatchGlob reports whether pattern matches rel, a path relative to an
// input root with '/' separators, or its base name, case-insensitively.
// In a pattern, '*' is any run of characters but '/', '?' one character
// but '/', '[a-z]' and '[!0-9]' classes, '\' quotes the next character, and
// a segment "**" is any number of whole folders (none included):
// "*.CR3", "DCIM/*/IMG_*.CR3", "**/rejects/**". As in rsync, a pattern
// without a leading '/' matches at any depth: against rel or any run of its
// last whole segments ("DCIM/*" matches "DCIM/a.dng" and "x/DCIM/a.dng",
// "*.CR3" a base name). A leading '/' anchors the pattern to the input
// root: it is then matched against the whole of rel only ("/DCIM/*" is not
// "x/DCIM/a.dng"). Invalid patterns (CheckGlob) match nothing.
func MatchGlob(pattern, rel string) bool {
	rel = strings.ToLower(filepath.ToSlash(rel))
	pattern = strings.ToLower(pattern)
	anchored := strings.HasPrefix(pattern, "/")
	pattern = strings.TrimLeft(pattern, "/")
	ps, rs := strings.Split(pattern, "/"), strings.Split(rel, "/")
	if anchored {
		return matchSegments(ps, rs)
	}
	for i := range rs {
		if matchSegments(ps, rs[i:]) {
			return true
		}
	}
	return false
}

// matchSegments matches path segments ps (with "**" for any number of
// segments) against rs.
func matchSegments(ps, rs []string) bool {
	for len(ps) > 0 {
		if ps[0] == "**" {
			for len(ps) > 0 && ps[0] == "**" {
				ps = ps[1:]
			}
			if len(ps) == 0 {
				return true
			}
			for i := range rs {
				if matchSegments(ps, rs[i:]) {
					return true
				}
			}
			return false
		}
		if len(rs) == 0 {
			return false
		}
		if ok, err := path.Match(ps[0], rs[0]); err != nil || !ok {
			return false
		}
		ps, rs = ps[1:], rs[1:]
	}
	return len(rs) == 0
}

// walkFilter is what a walk takes: RAW extensions, no AppleDouble files,
// no system folders, and the Include and Exclude globs of PlanOptions.
type walkFilter struct{ include, exclude []string }

func matchAny(patterns []string, rel string) bool {
	for _, p := range patterns {
		if MatchGlob(p, rel) {
			return true
		}
	}
	return false
}

// skipDir reports whether the walk skips the folder at rel (relative to
// its input root) named name.
func (f walkFilter) skipDir(rel, name string) bool {
	return IsSystemDir(name) || matchAny(f.exclude, rel)
}

// takeFile reports whether the walk takes the file at rel named name.
func (f walkFilter) takeFile(rel, name string) bool {
	if IsAppleDouble(name) || !header.IsRawExtension(name) {
		return false
	}
	if len(f.include) > 0 && !matchAny(f.include, rel) {
		return false
	}
	return !matchAny(f.exclude, rel)
}

// takeListed reports whether a listed file (PlanOptions.Files) at rel is
// taken: by the Include and Exclude globs (Exclude also on each folder on
// its way), as a walked file is; but it is named explicitly, as a file
// argument is, so its extension does not matter (a DNG named photo.bin is
// converted, anything else fails saying what it is) and an AppleDouble
// name or a system folder on its way does not skip it.
func (f walkFilter) takeListed(rel string) bool {
	segs := strings.Split(filepath.ToSlash(rel), "/")
	for i := range segs[:len(segs)-1] {
		if matchAny(f.exclude, strings.Join(segs[:i+1], "/")) {
			return false
		}
	}
	if len(f.include) > 0 && !matchAny(f.include, rel) {
		return false
	}
	return !matchAny(f.exclude, rel)
}
