package pipeline

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"unicode/utf8"

	"github.com/rawbatch/rawbatch/pipeline/rawerr"
)

// RawExtensions are the file extensions (lower case, without the dot) that
// rawbatch treats as candidate camera RAW files: every extension of a
// format LibRaw 0.20+ reads. Matching is case-insensitive.
var RawExtensions = []string{
	"3fr", "ari", "arw", "bay", "bmq", "cap", "cine", "cr2", "cr3", "crw", "cs1", "dc2", "dcr",
	"dng", "drf", "dsc", "eip", "erf", "fff", "ia", "iiq", "k25", "kc2", "kdc", "mdc", "mef",
	"mos", "mrw", "nef", "nrw", "orf", "ori", "pef", "pxn", "qtk", "raf", "raw", "rdc", "rw2",
	"rwl", "rwz", "sr2", "srf", "srw", "sti", "x3f",
}

var rawExtSet = func() map[string]bool {
	m := make(map[string]bool, len(RawExtensions))
	for _, e := range RawExtensions {
		m[e] = true
	}
	return m
}()

// IsRawExtension reports whether name's extension is one of RawExtensions.
func IsRawExtension(name string) bool {
	for i := len(name) - 1; i >= 0 && name[i] != '/'; i-- {
		if name[i] == '.' {
			return rawExtSet[string(bytes.ToLower([]byte(name[i+1:])))]
		}
	}
	return false
}

// sniffLen is how many leading bytes Sniff reads.
const sniffLen = 4096

// foreign are signatures of common files that are not camera RAW files.
var foreign = []struct {
	magic []byte
	what  string
}{
	{[]byte{0xFF, 0xD8, 0xFF}, "a JPEG image"},
	{[]byte("\x89PNG\r\n\x1a\n"), "a PNG image"},
	{[]byte("GIF8"), "a GIF image"},
	{[]byte("%PDF"), "a PDF document"},
	{[]byte("PK\x03\x04"), "a ZIP archive"},
	{[]byte("\x1f\x8b"), "a gzip archive"},
	{[]byte("BM"), "a BMP image"},
	{[]byte("8BPS"), "a Photoshop document"},
	{[]byte("<?xml"), "an XML document"},
}

// Sniff checks that the file at path, of size bytes, can be a camera RAW
// file before LibRaw sees it. It returns an error wrapping rawerr.ErrEmpty
// for an empty file, rawerr.ErrNotRaw for a file whose first bytes show
// another kind of file (JPEG, PNG, text, ...), and rawerr.ErrCorrupt for a
// CRW whose heap directory is missing (a truncated file). Files it cannot
// classify pass: package header checks TIFF-based and CR3 structure, and
// LibRaw decides the rest.
func Sniff(f io.ReaderAt, size int64) error {
	if size == 0 {
		return rawerr.ErrEmpty
	}
	head := make([]byte, min(size, sniffLen))
	if _, err := f.ReadAt(head, 0); err != nil && err != io.EOF {
		return fmt.Errorf("reading header: %w", err)
	}
	for _, s := range foreign {
		if bytes.HasPrefix(head, s.magic) {
			return fmt.Errorf("%w: it is %s", rawerr.ErrNotRaw, s.what)
		}
	}
	if len(head) >= 12 && string(head[8:12]) == "WEBP" && string(head[:4]) == "RIFF" {
		return fmt.Errorf("%w: it is a WebP image", rawerr.ErrNotRaw)
	}
	if isText(head) {
		return fmt.Errorf("%w: it is a text file", rawerr.ErrNotRaw)
	}
	if len(head) >= 14 && string(head[6:14]) == "HEAPCCDR" {
		return checkCIFF(f, head, size)
	}
	return nil
}

// checkCIFF checks that a Canon CIFF (CRW) file still holds its root heap's
// directory: the heap spans from the header to the end of the file and its
// last 4 bytes give the offset of its record table (a 2-byte count, then
// 10-byte records) from the heap's start (Canon CIFF specification 1.0r4,
// §2). A truncated CRW has garbage there, and LibRaw then calls the file
// unsupported.
func checkCIFF(f io.ReaderAt, head []byte, size int64) error {
	var bo binary.ByteOrder = binary.LittleEndian
	if head[0] == 'M' {
		bo = binary.BigEndian
	}
	hlen := int64(bo.Uint32(head[2:6]))
	var b [4]byte
	if hlen < 14 || size < hlen+6 {
		return fmt.Errorf("%w: the CRW heap is missing (file of %d bytes)", rawerr.ErrCorrupt, size)
	}
	if _, err := f.ReadAt(b[:], size-4); err != nil {
		return nil
	}
	table := hlen + int64(bo.Uint32(b[:]))
	var nb [2]byte
	if table+2 > size-4 {
		return fmt.Errorf("%w: the CRW directory lies past the end of the file (truncated)", rawerr.ErrCorrupt)
	}
	if _, err := f.ReadAt(nb[:], table); err != nil {
		return nil
	}
	n := int64(bo.Uint16(nb[:]))
	if n == 0 || table+2+n*10 > size-4 {
		return fmt.Errorf("%w: the CRW directory is cut off (truncated)", rawerr.ErrCorrupt)
	}
	// Each record whose data lives in the heap (storage bits 0x0000 of
	// its type) must point inside the heap, before the table.
	recs := make([]byte, n*10)
	if _, err := f.ReadAt(recs, table+2); err != nil {
		return nil
	}
	for i := int64(0); i < n; i++ {
		r := recs[i*10:]
		typ, sz, off := bo.Uint16(r), int64(bo.Uint32(r[2:])), int64(bo.Uint32(r[6:]))
		if typ&0xC000 == 0 && hlen+off+sz > table {
			return fmt.Errorf("%w: the CRW directory points past its data (truncated or damaged)", rawerr.ErrCorrupt)
		}
	}
	return nil
}

// isText reports whether b looks like text: valid UTF-8 without NUL or
// other control bytes than tab, CR, LF, FF and ESC.
func isText(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	// A multi-byte rune may be cut at the end of the sample.
	for cut := 0; cut < 4 && len(b) > 0 && !utf8.Valid(b); cut++ {
		b = b[:len(b)-1]
	}
	if !utf8.Valid(b) {
		return false
	}
	for _, c := range b {
		if c < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\f' && c != 0x1b {
			return false
		}
	}
	return true
}

// openAndSniff opens path for a size and Sniff check.
// It refuses anything but a regular file before opening it: opening a FIFO
// would block.
func openAndSniff(path string) (int64, error) {
	st, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	if !st.Mode().IsRegular() {
		return 0, ErrNotRegular
	}
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return st.Size(), Sniff(f, st.Size())
}

// ErrNotRegular: the input is a directory, FIFO, device or socket.
var ErrNotRegular = fmt.Errorf("%w: not a regular file", rawerr.ErrNotRaw)

// knownSignature reports whether head starts with the signature of a RAW
// container LibRaw knows: TIFF (DNG, NEF, CR2, ARW, PEF, 3FR, IIQ, ...),
// Olympus ORF, Panasonic RW2, Canon CIFF (CRW), ISO BMFF (CR3), Fujifilm
// RAF, Minolta MRW, Sigma X3F, ARRI. Headerless formats that LibRaw
// identifies by file size have none.
func knownSignature(head []byte) bool {
	for _, sig := range []string{"II*\x00", "MM\x00*", "IIRO", "IIRS", "MMOR", "IIU\x00", "FUJIFILM", "\x00MRM", "FOVb", "ARRI"} {
		if bytes.HasPrefix(head, []byte(sig)) {
			return true
		}
	}
	if len(head) >= 14 && string(head[6:14]) == "HEAPCCDR" {
		return true
	}
	return len(head) >= 12 && string(head[4:8]) == "ftyp"
}

// headBytes reads the first n bytes of path (fewer for a shorter file).
func headBytes(path string, n int) []byte {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	b := make([]byte, n)
	k, _ := io.ReadFull(f, b)
	return b[:k]
}
