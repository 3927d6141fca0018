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
// TIFF-based file whose full-size image data lies beyond the end of the
// file (a truncated or stripped file). Files it cannot classify pass: LibRaw
// decides.
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
	if len(head) >= 8 && (string(head[:4]) == "II*\x00" || string(head[:4]) == "MM\x00*") {
		return checkTIFFExtents(f, size)
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

// TIFF tags used by checkTIFFExtents (TIFF 6.0, DNG 1.4).
const (
	tagNewSubFileType  = 254
	tagImageWidth      = 256
	tagImageLength     = 257
	tagStripOffsets    = 273
	tagRowsPerStrip    = 278
	tagStripByteCounts = 279
	tagTileWidth       = 322
	tagTileLength      = 323
	tagTileOffsets     = 324
	tagTileByteCounts  = 325
	tagSubIFDs         = 330
)

// maxIFDs bounds the IFDs checkTIFFExtents visits, against loops and bombs.
const maxIFDs = 64

// checkTIFFExtents walks the IFD0 chain and SubIFDs of a TIFF-based file and
// fails for a full-resolution image (NewSubFileType 0) that has fewer
// strips or tiles than its size needs, or whose data starts past the end of
// the file. Structural oddities it cannot read are left to LibRaw.
func checkTIFFExtents(f io.ReaderAt, size int64) error {
	var bo binary.ByteOrder = binary.LittleEndian
	hdr := make([]byte, 8)
	if _, err := f.ReadAt(hdr, 0); err != nil {
		return nil
	}
	if hdr[0] == 'M' {
		bo = binary.BigEndian
	}
	seen := map[int64]bool{}
	queue := []int64{int64(bo.Uint32(hdr[4:]))}
	for len(queue) > 0 && len(seen) < maxIFDs {
		off := queue[0]
		queue = queue[1:]
		if off < 8 || off >= size || seen[off] {
			continue
		}
		seen[off] = true
		ifd, next, err := readIFD(f, bo, off, size)
		if err != nil {
			return nil
		}
		if next != 0 {
			queue = append(queue, next)
		}
		queue = append(queue, ifd[tagSubIFDs]...)
		if err := checkIFDData(ifd, size); err != nil {
			return err
		}
	}
	return nil
}

func checkIFDData(ifd map[uint16][]int64, size int64) error {
	if first(ifd[tagNewSubFileType]) != 0 {
		return nil
	}
	w, h := first(ifd[tagImageWidth]), first(ifd[tagImageLength])
	if w <= 0 || h <= 0 {
		return nil
	}
	offs, counts := ifd[tagStripOffsets], ifd[tagStripByteCounts]
	var want int64
	if tw, tl := first(ifd[tagTileWidth]), first(ifd[tagTileLength]); tw > 0 && tl > 0 {
		offs, counts = ifd[tagTileOffsets], ifd[tagTileByteCounts]
		want = ((w + tw - 1) / tw) * ((h + tl - 1) / tl)
	} else if rps := first(ifd[tagRowsPerStrip]); rps > 0 {
		want = (h + rps - 1) / rps
	}
	if len(offs) == 0 {
		return nil
	}
	if want > 0 && int64(len(offs)) < want {
		return fmt.Errorf("%w: the %d×%d image has %d of its %d data blocks", rawerr.ErrCorrupt, w, h, len(offs), want)
	}
	for i, o := range offs {
		if o >= size || (i < len(counts) && counts[i] > 0 && o+counts[i] > size+size/100+65536) {
			return fmt.Errorf("%w: the %d×%d image data reaches byte %d but the file has %d bytes (truncated)",
				rawerr.ErrCorrupt, w, h, o+max(0, at(counts, i)), size)
		}
	}
	return nil
}

func first(v []int64) int64 { return at(v, 0) }

func at(v []int64, i int) int64 {
	if i < len(v) {
		return v[i]
	}
	return 0
}

// maxTagValues bounds how many values of one tag readIFD loads.
const maxTagValues = 1 << 16

// readIFD reads the IFD at off: the values of the integer tags
// checkTIFFExtents needs, and the offset of the next IFD.
func readIFD(f io.ReaderAt, bo binary.ByteOrder, off, size int64) (map[uint16][]int64, int64, error) {
	var nb [2]byte
	if _, err := f.ReadAt(nb[:], off); err != nil {
		return nil, 0, err
	}
	n := int64(bo.Uint16(nb[:]))
	if off+2+n*12+4 > size {
		return nil, 0, io.ErrUnexpectedEOF
	}
	buf := make([]byte, n*12+4)
	if _, err := f.ReadAt(buf, off+2); err != nil {
		return nil, 0, err
	}
	ifd := map[uint16][]int64{}
	for i := int64(0); i < n; i++ {
		e := buf[i*12 : i*12+12]
		tag, typ, cnt := bo.Uint16(e), bo.Uint16(e[2:]), int64(bo.Uint32(e[4:]))
		switch tag {
		case tagNewSubFileType, tagImageWidth, tagImageLength, tagStripOffsets, tagRowsPerStrip,
			tagStripByteCounts, tagTileWidth, tagTileLength, tagTileOffsets, tagTileByteCounts, tagSubIFDs:
		default:
			continue
		}
		var sz int64
		switch typ {
		case 3: // SHORT
			sz = 2
		case 4, 13: // LONG, IFD
			sz = 4
		case 16: // LONG8 (BigTIFF)
			sz = 8
		default:
			continue
		}
		if cnt <= 0 || cnt > maxTagValues {
			continue
		}
		data := e[8:12]
		if cnt*sz > 4 {
			p := int64(bo.Uint32(e[8:]))
			if p+cnt*sz > size {
				continue
			}
			data = make([]byte, cnt*sz)
			if _, err := f.ReadAt(data, p); err != nil {
				continue
			}
		}
		vals := make([]int64, cnt)
		for j := range vals {
			switch sz {
			case 2:
				vals[j] = int64(bo.Uint16(data[j*2:]))
			case 4:
				vals[j] = int64(bo.Uint32(data[j*4:]))
			case 8:
				vals[j] = int64(bo.Uint64(data[j*8:]))
			}
		}
		ifd[tag] = vals
	}
	return ifd, int64(bo.Uint32(buf[n*12:])), nil
}

// openAndSniff opens path for a size and Sniff check.
func openAndSniff(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	if !st.Mode().IsRegular() {
		return 0, fmt.Errorf("not a regular file")
	}
	return st.Size(), Sniff(f, st.Size())
}
