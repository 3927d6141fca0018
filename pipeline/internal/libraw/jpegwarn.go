package libraw

/*
#include <stdio.h>
*/
import "C"

import (
	"strings"
	"syscall"
)

// LibRaw decodes lossy-JPEG DNG tiles (and some other JPEG-compressed raw
// data) with the system libjpeg and its default error manager, whose
// warnings about damaged data ("Corrupt JPEG data: premature end of data
// segment", "Corrupt JPEG data: bad Huffman code", "Premature end of JPEG
// file") are only printed to stderr: libjpeg fills the damaged blocks and
// LibRaw returns success, so the image shows bands. A rawbatch worker's
// stderr is a file (pipeline's runWorker), so Unpack reads back what was
// written to it during the unpack and fails on those warnings.

// jpegCorruptWarnings are the starts of libjpeg(-turbo) warnings that mean
// the compressed data is damaged (jerror.h JWRN_HIT_MARKER,
// JWRN_HUFF_BAD_CODE, JWRN_EXTRANEOUS_DATA, JWRN_JPEG_EOF,
// JWRN_NOT_SEQUENTIAL, JWRN_MUST_RESYNC).
var jpegCorruptWarnings = []string{"Corrupt JPEG data", "Premature end of JPEG file", "Invalid SOS parameters"}

// stderrMark returns the size of this process's stderr when it is a regular
// file (or a memfd), else -1: the point from which stderrSince reads.
func stderrMark() int64 {
	var st syscall.Stat_t
	if syscall.Fstat(2, &st) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return -1
	}
	return st.Size
}

// stderrSince returns at most 4 KiB written to stderr since mark (see
// stderrMark), "" when mark is -1.
func stderrSince(mark int64) string {
	if mark < 0 {
		return ""
	}
	C.fflush(nil)
	b := make([]byte, 4096)
	n, _ := syscall.Pread(2, b, mark)
	return string(b[:max(n, 0)])
}

// jpegCorruption returns the first libjpeg warning in msgs that means
// damaged data, or "".
func jpegCorruption(msgs string) string {
	for _, line := range strings.Split(msgs, "\n") {
		line = strings.TrimSpace(line)
		for _, w := range jpegCorruptWarnings {
			if strings.HasPrefix(line, w) {
				return line
			}
		}
	}
	return ""
}
