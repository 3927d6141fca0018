package header

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"unicode/utf16"

	"github.com/rawbatch/rawbatch/pipeline/tifftag"
)

// own is what a format parser found. Sizes are 0 when unknown.
type own struct {
	look            dngLook // DNG ProfileToneCurve, BaselineExposureOffset (dnglook.go)
	opcodes         *DNGOpcodeLists
	noPreview       bool // a DNG with no image besides its raw IFD (Header.NoPreview)
	make, model     string
	rawW, rawH      int64 // full raw size in pixels
	w, h            int64 // image area before rotation, 0 = use raw size
	orientation     int
	bps, samples    int
	compression     int
	variant         string
	exif            exifResult
	haveExif        bool
	truncated       string // why the raw data cannot be in the file, "" if it can
	unsafeForLibRaw bool   // damage known to make LibRaw 0.20's open loop
	unsupported     string
	crx             *CRX
	activeArea      [4]int
	defaultCrop     [4]int
	sensorArea      [4]int
	hasDefaultCrop  bool
	dng             bool
	orf, rw2, cr2   bool
	iiq             bool
	warnings        []string
	exifBlob        [2]int64 // file offset and length of a TIFF block for goexif
	exifBlobIsCanon bool
}

// --- Fujifilm RAF -------------------------------------------------------
//
// Header (big-endian; ExifTool FujiFilm RAF): "FUJIFILMCCD-RAW " at 0, the
// camera name (32 bytes) at 0x1C, the embedded JPEG offset/length at
// 0x54/0x58, the CFA header offset/length at 0x5C/0x60 and the raw CFA
// data's offset/length at 0x64/0x68. The CFA header
// is a count followed by (tag u16, size u16, data) records; 0x100 is the
// full raw size and 0x111 the cropped size, each as height, width (u16).
func parseRAF(src *source, o *own) {
	o.make = "FUJIFILM"
	if b, err := src.bytes(0x1c, 32); err == nil {
		o.model = cString(b)
	}
	hb, err := src.bytes(0x54, 24)
	if err != nil {
		return
	}
	be := binary.BigEndian
	jpgOff, jpgLen := int64(be.Uint32(hb)), int64(be.Uint32(hb[4:]))
	cfaOff, cfaLen := int64(be.Uint32(hb[8:])), int64(be.Uint32(hb[12:]))
	// The raw CFA data itself: offset and length at 0x64/0x68.
	dataOff, dataLen := int64(be.Uint32(hb[16:])), int64(be.Uint32(hb[20:]))
	if dataLen > 0 && dataOff+dataLen > src.size && o.truncated == "" {
		o.truncated = fmt.Sprintf("the raw data ends at byte %d, past the end of the %d-byte file", dataOff+dataLen, src.size)
	}
	defer func() {
		// Even lossy compressed RAF needs several bits per pixel; under 1
		// bit the data was stripped (exiftool's sample keeps 22 bytes).
		if px := o.rawW * o.rawH; px > 0 && dataLen >= 0 && dataLen*8 < px && o.truncated == "" {
			o.truncated = fmt.Sprintf("its raw data is %d bytes for a %d×%d image (stripped)", dataLen, o.rawW, o.rawH)
		}
	}()
	if jpgLen > 0 && src.has(jpgOff, min(jpgLen, 16)) {
		if pos, n, ok := jpegExif(src, jpgOff, jpgLen); ok {
			o.exifBlob = [2]int64{pos, n}
		}
	}
	if cfaLen < 4 || !src.has(cfaOff, 4) {
		return
	}
	cnt, err := src.bytes(cfaOff, 4)
	if err != nil {
		return
	}
	n := min(be.Uint32(cnt), 256)
	pos := cfaOff + 4
	end := cfaOff + min(cfaLen, 64<<10)
	for i := uint32(0); i < n && pos+4 <= end; i++ {
		rh, err := src.bytes(pos, 4)
		if err != nil {
			return
		}
		tag, sz := be.Uint16(rh), int64(be.Uint16(rh[2:]))
		if sz >= 4 && pos+4+sz <= end {
			if d, err := src.bytes(pos+4, 4); err == nil {
				h, w := int64(be.Uint16(d)), int64(be.Uint16(d[2:]))
				switch tag {
				case 0x100:
					o.rawW, o.rawH = w, h
				case 0x111:
					o.w, o.h = w, h
				}
			}
		}
		pos += 4 + sz
	}
}

// jpegExif finds the APP1 "Exif\0\0" segment of the JPEG at off and returns
// the file offset and length of the TIFF block inside it.
func jpegExif(src *source, off, n int64) (int64, int64, bool) {
	end := off + min(n, 128<<10)
	b, err := src.bytes(off, 2)
	if err != nil || b[0] != 0xff || b[1] != 0xd8 {
		return 0, 0, false
	}
	for pos, i := off+2, 0; pos+4 <= end && i < 64; i++ {
		m, err := src.bytes(pos, 4)
		if err != nil || m[0] != 0xff {
			return 0, 0, false
		}
		l := int64(binary.BigEndian.Uint16(m[2:]))
		if m[1] == 0xda || m[1] == 0xd9 || l < 2 {
			return 0, 0, false
		}
		if m[1] == 0xe1 && l >= 14 {
			if h, err := src.bytes(pos+4, 6); err == nil && string(h) == "Exif\x00\x00" && pos+2+l <= end {
				return pos + 10, l - 8, true
			}
		}
		pos += 2 + l
	}
	return 0, 0, false
}

// --- Minolta MRW ---------------------------------------------------------
//
// "\0MRM", u32 length of the block area, then blocks (4-byte id, u32 size,
// data), big-endian (dcraw parse_minolta): "\0PRD" holds the sensor
// height, width at +8 and the image height, width at +12 (u16); "\0TTW" is
// a TIFF block with IFD0 and EXIF.
func parseMRW(src *source, o *own) {
	o.make = "Minolta"
	h, err := src.bytes(4, 4)
	if err != nil {
		return
	}
	be := binary.BigEndian
	end := min(8+int64(be.Uint32(h)), src.size)
	for pos, i := int64(8), 0; pos+8 <= end && i < 64; i++ {
		bh, err := src.bytes(pos, 8)
		if err != nil {
			return
		}
		id, sz := string(bh[:4]), int64(be.Uint32(bh[4:]))
		body := pos + 8
		if sz > end-body {
			sz = end - body
		}
		switch id {
		case "\x00PRD":
			if d, err := src.bytes(body, 16); err == nil && sz >= 16 {
				o.rawH, o.rawW = int64(be.Uint16(d[8:])), int64(be.Uint16(d[10:]))
				o.bps = int(d[14])
			}
		case "\x00TTW":
			o.exifBlob = [2]int64{body, sz}
		}
		pos = body + sz
	}
}

// --- Sigma X3F -----------------------------------------------------------
//
// Little-endian (Sigma/Foveon X3F format 2.x): "FOVb", version, 16-byte
// id, mark bits, then columns, rows and rotation (degrees) of the image as
// the camera presents it at 28, 32, 36. The last u32 of the file is the
// offset of the "SECd" directory: version, count, then (offset, length,
// type) entries; "IMA2" sections start "SECi", version, type, format,
// columns, rows (type 3 = raw); "PROP" holds UTF-16 name/value pairs
// (CAMMANUF, CAMMODEL).
func parseX3F(src *source, o *own) {
	le := binary.LittleEndian
	h, err := src.bytes(0, 40)
	if err != nil {
		return
	}
	o.w, o.h = int64(le.Uint32(h[28:])), int64(le.Uint32(h[32:]))
	switch le.Uint32(h[36:]) {
	case 90:
		o.orientation = 6
	case 180:
		o.orientation = 3
	case 270:
		o.orientation = 8
	}
	o.make = "SIGMA"
	t, err := src.bytes(src.size-4, 4)
	if err != nil {
		return
	}
	dir := int64(le.Uint32(t))
	d, err := src.bytes(dir, 12)
	if err != nil || string(d[:4]) != "SECd" {
		return
	}
	n := min(le.Uint32(d[8:]), 64)
	for i := int64(0); i < int64(n); i++ {
		e, err := src.bytes(dir+12+12*i, 12)
		if err != nil {
			return
		}
		off, ln, typ := int64(le.Uint32(e)), int64(le.Uint32(e[4:])), string(e[8:12])
		switch typ {
		case "IMA2", "IMAG":
			s, err := src.bytes(off, 24)
			if err == nil && ln >= 24 && string(s[:4]) == "SECi" && le.Uint32(s[8:]) == 3 {
				if w, h := int64(le.Uint32(s[16:])), int64(le.Uint32(s[20:])); w*h > o.rawW*o.rawH {
					o.rawW, o.rawH = w, h
				}
			}
		case "PROP":
			x3fProps(src, off, ln, o)
		}
	}
}

func x3fProps(src *source, off, ln int64, o *own) {
	le := binary.LittleEndian
	if ln > 64<<10 || ln < 24 {
		return
	}
	b, err := src.bytes(off, ln)
	if err != nil || string(b[:4]) != "SECp" || le.Uint32(b[12:]) != 0 {
		return
	}
	n := int(min(le.Uint32(b[8:]), 1024))
	if 24+8*n > len(b) {
		return
	}
	chars := b[24+8*n:]
	str := func(at uint32) string {
		p := int(at) * 2
		if p < 0 || p >= len(chars) {
			return ""
		}
		var u []uint16
		for ; p+1 < len(chars) && len(u) < 128; p += 2 {
			c := le.Uint16(chars[p:])
			if c == 0 {
				break
			}
			u = append(u, c)
		}
		return strings.TrimSpace(string(utf16.Decode(u)))
	}
	for i := 0; i < n; i++ {
		e := b[24+8*i:]
		switch str(le.Uint32(e)) {
		case "CAMMANUF":
			if v := str(le.Uint32(e[4:])); v != "" {
				o.make = v
			}
		case "CAMMODEL":
			o.model = str(le.Uint32(e[4:]))
		}
	}
}

// --- Canon CRW (CIFF) ----------------------------------------------------
//
// Little-endian "II", u32 header length, "HEAPCCDR" (Canon CIFF 1.0r4).
// A heap ends with the u32 offset of its table: u16 count, then 10-byte
// records (tag, size, offset, offsets relative to the heap). Records of
// type 0x28/0x30 ((tag>>8)&0x38) are sub-heaps. Tags used: 0x080a
// Make\0Model, 0x1031 SensorInfo (u16: [1] width, [2] height, [5..8]
// left, top, right, bottom), 0x1810 ImageInfo (rotation, i32 at 12).
func parseCRW(src *source, o *own) {
	h, err := src.bytes(2, 4)
	if err != nil {
		return
	}
	start := int64(binary.LittleEndian.Uint32(h))
	budget := 4096
	crwHeap(src, start, src.size, 0, &budget, o)
}

func crwHeap(src *source, start, end int64, depth int, budget *int, o *own) {
	le := binary.LittleEndian
	if depth > 4 || end-start < 6 || start < 0 {
		return
	}
	t, err := src.bytes(end-4, 4)
	if err != nil {
		return
	}
	tbl := start + int64(le.Uint32(t))
	c, err := src.bytes(tbl, 2)
	if err != nil || tbl >= end {
		return
	}
	n := int64(le.Uint16(c))
	for i := int64(0); i < n && *budget > 0; i++ {
		*budget--
		r, err := src.bytes(tbl+2+10*i, 10)
		if err != nil || tbl+2+10*i+10 > end {
			return
		}
		tag := le.Uint16(r)
		size, off := int64(le.Uint32(r[2:])), start+int64(le.Uint32(r[6:]))
		if tag&0xc000 == 0x4000 { // value stored in the record
			continue
		}
		if off < start || size < 0 || size > end-off {
			continue
		}
		switch typ := (tag >> 8) & 0x38; {
		case typ == 0x28 || typ == 0x30:
			crwHeap(src, off, off+size, depth+1, budget, o)
			continue
		}
		switch tag & 0x3fff {
		case 0x080a:
			if b, err := src.bytes(off, min(size, 128)); err == nil {
				parts := bytes.SplitN(b, []byte{0}, 3)
				o.make = cString(parts[0])
				if len(parts) > 1 {
					o.model = cString(parts[1])
				}
			}
		case 0x1031:
			if b, err := src.bytes(off, min(size, 18)); err == nil && len(b) >= 18 {
				v := func(i int) int64 { return int64(le.Uint16(b[2*i:])) }
				o.rawW, o.rawH = v(1), v(2)
				if l, tp, rt, bt := v(5), v(6), v(7), v(8); rt > l && bt > tp {
					o.w, o.h = rt-l+1, bt-tp+1
					o.sensorArea = [4]int{int(l), int(tp), int(rt - l + 1), int(bt - tp + 1)}
				}
			}
		case 0x1810:
			if b, err := src.bytes(off, min(size, 16)); err == nil && len(b) >= 16 {
				switch int32(le.Uint32(b[12:])) {
				case 90:
					o.orientation = 8
				case 180:
					o.orientation = 3
				case 270, -90:
					o.orientation = 6
				}
			}
		}
	}
}

func cString(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return strings.TrimSpace(strings.ToValidUTF8(string(b), ""))
}

// canonSensorInfo reads Canon maker-note SensorInfo (0xE0, int16u[17]:
// [1] SensorWidth, [2] SensorHeight, [5] left, [6] top, [7] right, [8]
// bottom border, ExifTool Canon SensorInfo) from the maker-note IFD at
// relative offset off of t. raw is the sensor size; w, h the image area,
// area the image area as x, y, w, h (Header.SensorArea).
func canonSensorInfo(t *tiffBlock, off int64) (rawW, rawH, w, h int64, area [4]int, lens string) {
	d, ok := t.readIFD(off)
	if !ok {
		return
	}
	if e, ok := d.find(tifftag.CanonSensorInfo); ok {
		if v := t.nums(e, 9); len(v) == 9 {
			rawW, rawH = int64(v[1]), int64(v[2])
			if v[7] > v[5] && v[8] > v[6] {
				w, h = int64(v[7]-v[5]+1), int64(v[8]-v[6]+1)
				if v[5] >= 0 && v[6] >= 0 {
					area = [4]int{int(v[5]), int(v[6]), int(w), int(h)}
				}
			}
		}
	}
	if e, ok := d.find(tifftag.CanonLensModel); ok {
		lens = t.str(e)
	}
	return
}

// finite reports whether all values are finite.
func finite(v []float64) bool {
	for _, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}

// --- Phase One IIQ -------------------------------------------------------
//
// At base (0 for a bare "IIII" file, 8 when wrapped in a TIFF header): the
// byte order ("IIII"), a u32 whose upper 24 bits are "Raw", the directory
// offset (relative to base); the directory is an entry count, a u32, then
// 16-byte entries (tag, type, len, data) (dcraw/LibRaw parse_phase_one).
// Tags 0x108/0x109 are the raw width/height, 0x10c/0x10d the image size.
//
// LibRaw 0.20.2 loops (for minutes or forever) opening an IIQ whose
// directory is cut short (exiftool_PhaseOne.iiq cut to 1700..2000 bytes),
// so an IIQ whose directory or any entry's data lies past the end of the
// file is reported corrupt here and not handed to LibRaw.
func parsePhaseOne(src *source, base int64, o *own) {
	le := binary.LittleEndian
	h, err := src.bytes(base, 12)
	if err != nil || string(h[:4]) != "IIII" || le.Uint32(h[4:])>>8 != 0x526177 {
		return
	}
	dir := base + int64(le.Uint32(h[8:]))
	d, err := src.bytes(dir, 8)
	if err != nil {
		o.truncated = fmt.Sprintf("the Phase One directory at offset %d lies past the end of the %d-byte file", dir, src.size)
		o.unsafeForLibRaw = true
		return
	}
	n := int64(le.Uint32(d))
	if n > 4096 || !src.has(dir+8, 16*n) {
		o.truncated = fmt.Sprintf("the Phase One directory at offset %d (%d entries) does not fit in the %d-byte file", dir, n, src.size)
		o.unsafeForLibRaw = true
		return
	}
	for i := int64(0); i < n; i++ {
		e, err := src.bytes(dir+8+16*i, 16)
		if err != nil {
			o.unsafeForLibRaw = true
			return
		}
		tag, ln, data := le.Uint32(e), int64(le.Uint32(e[8:])), int64(le.Uint32(e[12:]))
		if ln > 4 && !src.has(base+data, ln) {
			o.truncated = fmt.Sprintf("Phase One entry %#x claims %d bytes at offset %d, past the end of the %d-byte file", tag, ln, base+data, src.size)
			o.unsafeForLibRaw = true
			return
		}
		switch tag {
		case 0x108:
			o.rawW = data
		case 0x109:
			o.rawH = data
		case 0x10c:
			o.w = data
		case 0x10d:
			o.h = data
		}
	}
}
