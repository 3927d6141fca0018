package pipeline

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"

	"golang.org/x/sys/unix"

	"github.com/rawbatch/rawbatch/pipeline/header"
)

// WrittenByRawbatch reports whether the file at path is absent or was
// written by rawbatch: its EXIF Software tag, within the first 64 KiB of
// every format rawbatch writes, is "rawbatch". A symbolic link at path,
// dangling or not, is never rawbatch's (it writes none): it is opened
// without following it (O_NOFOLLOW).
func WrittenByRawbatch(path string) bool {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if errors.Is(err, unix.ELOOP) {
		return false
	}
	if err != nil {
		return true // absent (or unreadable: the write will say why)
	}
	defer f.Close()
	head := make([]byte, 64<<10)
	n, _ := io.ReadFull(f, head)
	if bytes.Contains(head[:n], []byte("rawbatch\x00")) {
		return true
	}
	// WebP keeps its EXIF chunk after the image data (WebP container
	// specification: VP8X, ICCP, image, EXIF, XMP): walk the RIFF chunks of
	// a file that starts as one (pipeline/header's signature table).
	if n >= 12 && header.StartsAs("WEBP", head[:12]) {
		return webpExifHas(f, []byte("rawbatch\x00"))
	}
	return false
}

// webpExifHas reports whether the EXIF chunk of the WebP file f contains
// needle, reading only chunk headers and that chunk (at most 1 MiB).
func webpExifHas(f *os.File, needle []byte) bool {
	off := int64(12)
	hdr := make([]byte, 8)
	for range 64 { // a rawbatch WebP has at most five chunks
		if _, err := f.ReadAt(hdr, off); err != nil {
			return false
		}
		size := int64(binary.LittleEndian.Uint32(hdr[4:]))
		if string(hdr[:4]) == "EXIF" {
			if size > 1<<20 {
				return false
			}
			b := make([]byte, size)
			if _, err := f.ReadAt(b, off+8); err != nil {
				return false
			}
			return bytes.Contains(b, needle)
		}
		off += 8 + size + size&1 // chunks are padded to even sizes
	}
	return false
}
