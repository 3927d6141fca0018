package pipeline

import (
	"encoding/hex"
	"hash/fnv"
	"path/filepath"
	"unicode/utf8"
)

// maxNameBytes is the longest file name (one path component) Linux file
// systems accept: NAME_MAX, 255 bytes.
const maxNameBytes = 255

// tempSuffixBytes is what follows the stem in a temporary name: "." and
// os.CreateTemp's random part (a uint32 in decimal, at most 10 digits).
const tempSuffixBytes = 1 + 10

// tempStem returns the part of path's base name that temporary files for
// path carry after TempPrefix: the base name itself when the temporary
// name fits in maxNameBytes, else its longest prefix that leaves room (cut
// at a UTF-8 character boundary), "~" and 16 hex digits of the FNV-1a hash
// of the whole base name, so that every valid output name (up to 255
// bytes) gets a temporary name that fits and that names of different
// outputs stay apart.
func tempStem(path string) string {
	base := filepath.Base(path)
	if len(TempPrefix)+len(base)+tempSuffixBytes <= maxNameBytes {
		return base
	}
	h := fnv.New64a()
	h.Write([]byte(base))
	sum := "~" + hex.EncodeToString(h.Sum(nil))
	keep := maxNameBytes - len(TempPrefix) - tempSuffixBytes - len(sum)
	for keep > 0 && !utf8.RuneStart(base[keep]) {
		keep--
	}
	return base[:keep] + sum
}

// TempPattern is the os.CreateTemp pattern of the temporary file for the
// output at path (in path's directory): TempPrefix, its (possibly
// shortened) base name, ".*".
func TempPattern(path string) string { return TempPrefix + tempStem(path) + ".*" }
