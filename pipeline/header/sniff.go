package header

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/rawbatch/rawbatch/internal/rawerr"
)

// This file is rawbatch's one recognition of files: by name
// (IsRawExtension) and by their first bytes (the signatures table, used by
// Sniff, Read and HasRawSignature).

// RawExtensions are the file extensions (lower case, without the dot) that
// rawbatch treats as candidate camera RAW files: every extension of a
// format LibRaw 0.20+ reads, GoPro's GPR included (LibRaw reads it only
// when built with the GoPro SDK: otherwise the file fails as unsupported,
// named, instead of being passed over). Matching is case-insensitive.
var RawExtensions = []string{
	"3fr", "ari", "arw", "bay", "bmq", "cap", "cine", "cr2", "cr3", "crw", "cs1", "dc2", "dcr",
	"dng", "drf", "dsc", "eip", "erf", "fff", "gpr", "ia", "iiq", "k25", "kc2", "kdc", "mdc", "mef",
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

// IsRawExtension reports whether the extension of name (a slash-separated
// path; the part after the last dot of its last element) is one of
// RawExtensions, ignoring case.
func IsRawExtension(name string) bool {
	for i := len(name) - 1; i >= 0 && name[i] != '/'; i-- {
		if name[i] == '.' {
			return rawExtSet[strings.ToLower(name[i+1:])]
		}
	}
	return false
}

// part is bytes expected at an offset of the file.
type part struct {
	at    int
	magic string
}

// signature is one row of the signatures table: the file starts with all
// of match. A RAW container has raw set and, when one of our parsers reads
// it, a kind; a foreign file names what it is for the error ("it is a JPEG
// image").
type signature struct {
	match   []part
	format  string // the container or file format: "TIFF", "ORF", "CIFF", "JPEG", "WEBP", ...
	kind    string // our parser: "TIFF", "CR3", "RAF", "MRW", "X3F", "CRW"; "" none (LibRaw only)
	raw     bool   // a camera RAW container LibRaw knows
	foreign string // another kind of file, as "a JPEG image"
}

func at0(magic string) []part { return []part{{0, magic}} }

// signatures is the one table of file signatures, first match wins. RAW
// containers: TIFF 6.0 §2 ("II*\0", "MM\0*") with the variants of Olympus
// ORF ("IIRO", "IIRS", "MMOR") and Panasonic RW2 ("IIU\0") as LibRaw reads
// them; Fujifilm RAF ("FUJIFILM"); Minolta MRW ("\0MRM" block); Sigma X3F
// ("FOVb"); Canon CIFF 1.0r4 §2 (byte order, header length, then
// "HEAPCCDR" at 6; our CRW parser reads the little-endian 26-byte header
// cameras write); ISO/IEC 14496-12 §4.3 (a "ftyp" box first; brand
// "crx " is Canon CR3, "avif" an AVIF image, AV1 Image File Format
// §9.3); ARRI ("ARRI"). Headerless formats that LibRaw
// identifies by file size have none. Foreign files: JPEG (ISO/IEC 10918-1
// SOI and a marker), PNG (ISO/IEC 15948 §5.2), GIF, PDF, ZIP local header,
// gzip (RFC 1952), BMP, Photoshop PSD, JPEG XL (ISO/IEC 18181-2 container
// signature box, or the bare codestream's FF 0A, ISO/IEC 18181-1 §9.1), XML declaration, WebP (RIFF, then
// "WEBP" at 8, RFC 9649 §2.5) and other RIFF files.
var signatures = []signature{
	{match: at0("FUJIFILM"), format: "RAF", kind: "RAF", raw: true},
	{match: at0("\x00MRM"), format: "MRW", kind: "MRW", raw: true},
	{match: at0("FOVb"), format: "X3F", kind: "X3F", raw: true},
	{match: at0("II\x1a\x00\x00\x00HEAPCCDR"), format: "CIFF", kind: "CRW", raw: true},
	{match: []part{{6, "HEAPCCDR"}}, format: "CIFF", raw: true},
	{match: []part{{4, "ftypcrx "}}, format: "CR3", kind: "CR3", raw: true},
	{match: []part{{4, "ftypavif"}}, format: "AVIF", foreign: "an AVIF image"},
	{match: []part{{4, "ftyp"}}, format: "BMFF", raw: true},
	{match: at0("II*\x00"), format: "TIFF", kind: "TIFF", raw: true},
	{match: at0("MM\x00*"), format: "TIFF", kind: "TIFF", raw: true},
	{match: at0("IIRO"), format: "ORF", kind: "TIFF", raw: true},
	{match: at0("IIRS"), format: "ORF", kind: "TIFF", raw: true},
	{match: at0("MMOR"), format: "ORF", kind: "TIFF", raw: true},
	{match: at0("IIU\x00"), format: "RW2", kind: "TIFF", raw: true},
	{match: at0("ARRI"), format: "ARRI", raw: true},

	{match: at0("\xff\xd8\xff"), format: "JPEG", foreign: "a JPEG image"},
	{match: at0("\x89PNG\r\n\x1a\n"), format: "PNG", foreign: "a PNG image"},
	{match: at0("\x00\x00\x00\x0cJXL \r\n\x87\n"), format: "JXL", foreign: "a JPEG XL image"},
	{match: at0("\xff\x0a"), format: "JXL", foreign: "a JPEG XL image"},
	{match: at0("GIF8"), format: "GIF", foreign: "a GIF image"},
	{match: at0("%PDF"), format: "PDF", foreign: "a PDF document"},
	{match: at0("PK\x03\x04"), format: "ZIP", foreign: "a ZIP archive"},
	{match: at0("\x1f\x8b"), format: "GZIP", foreign: "a gzip archive"},
	{match: at0("BM"), format: "BMP", foreign: "a BMP image"},
	{match: at0("8BPS"), format: "PSD", foreign: "a Photoshop document"},
	{match: at0("<?xml"), format: "XML", foreign: "an XML document"},
	{match: []part{{0, "RIFF"}, {8, "WEBP"}}, format: "WEBP", foreign: "a WebP image"},
	{match: at0("RIFF"), format: "RIFF", foreign: "a RIFF (WebP/AVI/WAV) file"},
}

// recognise returns the first row of signatures that head matches, or
// the zero signature.
func recognise(head []byte) signature {
	for _, s := range signatures {
		ok := true
		for _, p := range s.match {
			if len(head) < p.at+len(p.magic) || string(head[p.at:p.at+len(p.magic)]) != p.magic {
				ok = false
				break
			}
		}
		if ok {
			return s
		}
	}
	return signature{}
}

// sniffLen is how many leading bytes Sniff reads and isText looks at.
const sniffLen = 4096

// Sniff checks that a file of size bytes read through f can be a camera
// RAW file before LibRaw sees it. It returns an error wrapping
// rawerr.ErrEmpty for an empty file, rawerr.ErrNotRaw for a file whose
// first bytes show another kind of file ("not a raw file: it is a JPEG
// image", "... it is a text file"), and rawerr.ErrCorrupt for a CRW whose
// heap directory is missing or cut off (a truncated file). Files it cannot
// classify pass: Read checks TIFF-based and CR3 structure, and LibRaw
// decides the rest. The errors do not name a path.
func Sniff(f io.ReaderAt, size int64) error {
	if size == 0 {
		return rawerr.ErrEmpty
	}
	head := make([]byte, min(size, sniffLen))
	if _, err := f.ReadAt(head, 0); err != nil && err != io.EOF {
		return fmt.Errorf("reading header: %w", err)
	}
	sig := recognise(head)
	if sig.foreign != "" {
		return fmt.Errorf("%w: it is %s", rawerr.ErrNotRaw, sig.foreign)
	}
	if isText(head) {
		return fmt.Errorf("%w: it is a text file", rawerr.ErrNotRaw)
	}
	if len(head) >= 14 && string(head[6:14]) == "HEAPCCDR" {
		return checkCIFF(f, head, size)
	}
	return nil
}

// ErrNotRegular is the error of an input that is a directory, FIFO, device
// or socket: "not a raw file: not a regular file", wrapping
// rawerr.ErrNotRaw.
var ErrNotRegular = fmt.Errorf("%w: not a regular file", rawerr.ErrNotRaw)

// SniffFile is Sniff of the file at path, returning its size in bytes. It
// refuses anything but a regular file (ErrNotRegular) before opening it:
// opening a FIFO would block. Errors of stat and open are the *fs.PathError
// of package os; Sniff's do not name the path.
func SniffFile(path string) (int64, error) {
	f, st, err := openRegular(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return st.Size(), Sniff(f, st.Size())
}

// openRegular opens path for reading if it is a regular file, and
// returns ErrNotRegular, without opening it, for anything else: opening a
// FIFO blocks until a writer comes, a device may do anything. The check
// is made again on the open file, for a path replaced in between. Errors
// of stat and open are the *fs.PathError of package os.
func openRegular(path string) (*os.File, os.FileInfo, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, nil, ErrNotRegular
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	if st, err = f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		if err == nil {
			err = ErrNotRegular
		}
		return nil, nil, err
	}
	return f, st, nil
}

// HasRawSignature reports whether the file at path starts with the
// signature of a RAW container LibRaw knows (the raw rows of the
// signatures table: TIFF-based, ORF, RW2, CRW, ISO BMFF, RAF, MRW, X3F,
// ARRI). It is false for a file it cannot read, and for the headerless
// formats LibRaw identifies by size.
func HasRawSignature(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var b [16]byte
	n, _ := io.ReadFull(f, b[:])
	return recognise(b[:n]).raw
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

// isText reports whether the first sniffLen bytes of b look like text:
// valid UTF-8 (a multi-byte rune may be cut at the end of the sample)
// without NUL or other control bytes than tab, LF, CR, FF and ESC.
func isText(b []byte) bool {
	b = b[:min(len(b), sniffLen)]
	if len(b) == 0 {
		return false
	}
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
