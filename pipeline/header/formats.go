package header

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"

	"github.com/rawbatch/rawbatch/pipeline/internal/libraw"
	"github.com/rawbatch/rawbatch/pipeline/tifftag"
)

// libraw021 is LibRaw 0.21.0 as libraw_versionNumber() encodes it.
const libraw021 = 0<<16 | 21<<8 | 0

// exifTags are the tags whose values goexif needs for EXIF; the blob given
// to goexif is cut after the last of them (and after the IFD tables), so
// large unrelated values (DNG profiles, XMP, previews) are not read.
var exifTags = map[uint16]bool{
	tifftag.Make: true, tifftag.Model: true, tifftag.Orientation: true, tifftag.DateTime: true, tifftag.ExifIFD: true,
	tifftag.ExposureTime: true, tifftag.FNumber: true, tifftag.PhotographicSensitivity: true,
	tifftag.DateTimeOriginal: true, tifftag.DateTimeDigitized: true, tifftag.FocalLength: true,
	tifftag.LensModel: true, tifftag.MakerNote: true,
	tifftag.OffsetTime: true, tifftag.OffsetTimeOriginal: true, tifftag.OffsetTimeDigitized: true,
	tifftag.SubSecTime: true, tifftag.SubSecTimeOriginal: true, tifftag.SubSecTimeDigitized: true,
}

// parseTIFF reads a TIFF-based RAW (DNG, CR2, NEF, ARW, ORF, RW2, PEF, ...).
func parseTIFF(src *source, o *own) {
	t, ok := newTIFFBlock(src, 0, src.size)
	if !ok {
		return
	}
	o.tiffFlavour(t)
	chain, subs, exifIFD := t.walk()
	if len(chain) == 0 {
		switch {
		case t.ifd0 >= src.size:
			o.truncated = fmt.Sprintf("IFD0 at offset %d lies past the end of the %d-byte file", t.ifd0, src.size)
		case t.cut != "":
			o.truncated = t.cut
		}
		return
	}
	ifd0 := chain[0]
	all := append(append([]*ifd{}, chain...), subs...)
	o.identity(chain, all)
	raw := pickRaw(all, o.dng)
	if raw == nil && o.dng {
		raw = pickRaw(all, false)
	}
	if o.iiq {
		raw = nil // the raw lives in Phase One's own directory
		parsePhaseOne(src, 8, o)
	}
	// LibRaw's rule (pinned by synthdng's tests): IFD0's Orientation,
	// or the raw IFD's when IFD0 has none or 1.
	o.orientation = ifd0.orientation
	if o.orientation <= 1 && raw != nil && raw.orientation > 1 {
		o.orientation = raw.orientation
	}
	canon := strings.HasPrefix(o.make, "Canon")
	if raw != nil {
		o.rawLayout(t, raw)
	}
	o.checkColourTags(t, ifd0, raw)
	if o.dng {
		o.noPreview = raw != nil && onlyRaw(all, raw)
		o.look = readDNGLook(t, ifd0)
		if raw != nil {
			o.opcodes = findOpcodeLists(t, raw)
		}
	}
	if o.rw2 {
		panasonic(t, ifd0, o)
	}
	if canon && exifIFD != nil {
		o.canonMakerNote(t, exifIFD, raw)
	}
	if o.cr2 && raw == nil && len(chain) >= 4 {
		o.cr2Raw(t, chain[3])
	}
	if strings.HasPrefix(strings.ToUpper(o.make), "SONY") && raw != nil {
		o.variant = sonyVariant(raw)
		if o.variant == "lossless" && libraw.VersionNumber() < libraw021 {
			// LibRaw 0.20 has no decoder for it: sony_ljpeg_load_raw
			// arrived in 0.21.
			o.unsupported = "Sony lossless-compressed ARW needs LibRaw 0.21 or later"
		}
	}
	if raw == nil && o.rawW == 0 && o.truncated == "" {
		o.subIFDPastEnd(t, all)
	}
	// A copy stopped inside the header: in the raw IFD's entries, or
	// before the raw IFD was reached. (Other IFDs cut, a bogus chain
	// link in a good file, do not count.)
	if o.truncated == "" && t.cut != "" && (raw != nil && raw.cut || raw == nil && o.rawW == 0) {
		o.truncated = t.cut
	}
	o.readExif(t, chain, exifIFD, canon)
}

// tiffFlavour sets which TIFF-based format the header's magic and
// signature name: ORF, RW2, CR2 or Phase One IIQ.
func (o *own) tiffFlavour(t *tiffBlock) {
	head := t.src.head
	magic := t.bo.Uint16(head[2:])
	o.orf = magic == 0x4f52 || magic == 0x5352
	o.rw2 = magic == 0x55
	o.cr2 = len(head) >= 11 && string(head[8:10]) == "CR" && head[10] == 2
	o.iiq = len(head) >= 12 && string(head[8:12]) == "IIII" // Phase One IIQ
}

// identity sets the make and model (the first the IFD0 chain gives) and
// whether any IFD is a DNG's; a DNG without either takes IFD0's
// UniqueCameraModel as its model.
func (o *own) identity(chain, all []*ifd) {
	for _, d := range chain {
		if o.make == "" {
			o.make = d.make
		}
		if o.model == "" {
			o.model = d.model
		}
	}
	for _, d := range all {
		o.dng = o.dng || d.dng
	}
	if o.dng && o.make == "" && o.model == "" {
		o.model = chain[0].uniqueModel
	}
}

// rawLayout sets the raw image's size, sample layout and compression from
// its IFD, for a DNG also its ActiveArea and DefaultCropOrigin/Size, and
// checks that its data lies within the file.
func (o *own) rawLayout(t *tiffBlock, raw *ifd) {
	o.rawW, o.rawH = raw.width, raw.height
	o.bps, o.samples, o.compression = raw.bps, max(raw.samples, 1), raw.compression
	if o.compression < 0 {
		o.compression = 1
	}
	if o.dng {
		if a := raw.activeArea; len(a) == 4 && finite(a) {
			top, left, bottom, right := int64(a[0]), int64(a[1]), int64(a[2]), int64(a[3])
			if top >= 0 && left >= 0 && bottom > top && right > left && bottom <= raw.height && right <= raw.width {
				o.activeArea = [4]int{int(top), int(left), int(bottom), int(right)}
				o.w, o.h = right-left, bottom-top
			}
		}
		if c, s := raw.cropOrigin, raw.cropSize; len(s) == 2 && finite(s) && s[0] > 0 && s[1] > 0 && s[0] < maxSide && s[1] < maxSide {
			o.defaultCrop[2], o.defaultCrop[3] = int(math.Round(s[0])), int(math.Round(s[1]))
			if len(c) == 2 && finite(c) && c[0] >= 0 && c[1] >= 0 && c[0] < maxSide && c[1] < maxSide {
				o.defaultCrop[0], o.defaultCrop[1] = int(math.Round(c[0])), int(math.Round(c[1]))
			}
		}
	}
	o.checkData(t, raw)
}

// canonMakerNote reads the sensor size and area and the lens name from a
// Canon maker note in the Exif IFD; the sizes replace the raw IFD's for a
// CR2 or when no raw IFD was found.
func (o *own) canonMakerNote(t *tiffBlock, exifIFD, raw *ifd) {
	e, ok := exifIFD.find(tifftag.MakerNote)
	if !ok {
		return
	}
	pos, _, ok := t.valueAt(e)
	if !ok {
		return
	}
	rw, rh, w, h, area, lens := canonSensorInfo(t, pos-t.base)
	if rw > 0 && rh > 0 && (raw == nil || o.cr2) {
		o.rawW, o.rawH = rw, rh
		o.w, o.h = w, h
		o.sensorArea = area
	}
	if lens != "" {
		o.exif.Lens = lens
	}
}

// cr2Raw reads a CR2's raw from IFD3 d, which holds the lossless-JPEG raw
// without ImageWidth: the bit depth (and the size when the maker note gave
// none) from the JPEG's SOF3.
func (o *own) cr2Raw(t *tiffBlock, d *ifd) {
	o.compression = max(d.compression, 1)
	o.samples = 1
	if e, ok := d.find(tifftag.StripOffsets); ok {
		if off, ok := t.elem(e, 0); ok {
			if bits, w, h := jpegSOF3(t.src, off); bits > 0 {
				o.bps = bits
				if o.rawW == 0 {
					o.rawW, o.rawH = w, h
				}
			}
		}
	}
	o.checkData(t, d)
}

// subIFDPastEnd marks the file truncated when a SubIFD pointer (where the
// raw image would be described) lies past its end.
func (o *own) subIFDPastEnd(t *tiffBlock, all []*ifd) {
	for _, d := range all {
		for _, s := range d.subIFDs {
			if t.base+s >= t.src.size {
				o.truncated = fmt.Sprintf("SubIFD at offset %d (where the raw image is described) lies past the end of the %d-byte file", s, t.src.size)
			}
		}
	}
}

// readExif decodes the EXIF of the IFD0 chain and the Exif IFD with goexif,
// from the start of the file up to the last IFD table or EXIF value it
// needs. A lens name found before (Canon's maker note) is kept when EXIF
// has none.
func (o *own) readExif(t *tiffBlock, chain []*ifd, exifIFD *ifd, canon bool) {
	ifds := append([]*ifd{}, chain...)
	if exifIFD != nil {
		ifds = append(ifds, exifIFD)
	}
	// The maker note is only needed for a lens name when EXIF has none
	// (Canon LensModel 0x95, Nikon Lens 0x84).
	nikon := strings.HasPrefix(strings.ToUpper(o.make), "NIKON")
	needNote := canon || nikon
	if exifIFD != nil {
		if _, ok := exifIFD.find(42036); ok {
			needNote = false
		}
	}
	lens := o.exif.Lens
	ext := t.exifExtent(ifds, needNote)
	var blob []byte
	if chainExt := t.exifExtent(chain, needNote); exifIFD != nil && !needNote && ext > chainExt+16<<10 {
		// The Exif IFD lies far after IFD0 (Adobe DNG Converter puts it
		// after the previews): give goexif the start of the file plus a
		// relocated copy of the Exif IFD instead of everything between.
		if b, err := t.src.bytes(t.base, chainExt); err == nil {
			blob = relocateExif(t, b, chain[0], exifIFD)
		}
	} else if b, err := t.src.bytes(t.base, ext); err == nil {
		blob = b
	}
	o.exifBlobIsCanon = canon
	if blob != nil {
		o.exif = decodeExif(blob, "EXIF", canon)
		o.haveExif = true
		o.warnings = append(o.warnings, o.exif.warnings...)
	}
	if o.exif.Lens == "" {
		o.exif.Lens = lens
	}
}

// exifExtent is the length of the start of the TIFF block that holds the
// IFD tables of ds and the values of their EXIF tags (exifTags; the maker
// note only when needNote and at most maxMakerNoteLen bytes long), at
// least 8 and at most maxExifBlob bytes or the block's end.
func (t *tiffBlock) exifExtent(ds []*ifd, needNote bool) int64 {
	ext := int64(8)
	for _, d := range ds {
		ext = max(ext, d.off+2+12*int64(len(d.entries))+4)
		for _, e := range d.entries {
			if !exifTags[e.tag] {
				continue
			}
			if pos, n, ok := t.valueAt(e); ok && (e.tag != tifftag.MakerNote || (needNote && n <= maxMakerNoteLen)) {
				ext = max(ext, pos-t.base+n)
			}
		}
	}
	return min(ext, maxExifBlob, t.end-t.base)
}

// relocateExif returns a copy of head (the start of the TIFF block, holding
// the IFD0 chain) followed by a copy of the Exif IFD ex with its kept
// values, and IFD0's Exif pointer set to it. Entries not in keepTags, the
// maker note, and entries whose values are unreadable become 1-byte
// UNDEFINED values.
func relocateExif(t *tiffBlock, head []byte, ifd0, ex *ifd) []byte {
	bo := t.bo.(binary.AppendByteOrder)
	b := append(make([]byte, 0, len(head)+2+12*len(ex.entries)+4+1024), head...)
	if len(b)%2 == 1 {
		b = append(b, 0)
	}
	at := len(b)
	b = bo.AppendUint16(b, uint16(len(ex.entries)))
	for _, e := range ex.entries {
		raw, err := t.src.bytes(e.pos, 12)
		if err != nil {
			return nil
		}
		b = append(b, raw...)
	}
	b = bo.AppendUint32(b, 0)
	for i, e := range ex.entries {
		p := at + 2 + 12*i
		pos, n, ok := t.valueAt(e)
		if keepTags[e.tag] && e.tag != tifftag.MakerNote && ok && n > 4 && n <= 4096 {
			if v, err := t.src.bytes(pos, n); err == nil {
				t.bo.PutUint32(b[p+8:], uint32(len(b)))
				b = append(b, v...)
				if len(b)%2 == 1 {
					b = append(b, 0)
				}
				continue
			}
		}
		if !keepTags[e.tag] || e.tag == tifftag.MakerNote || !ok || n > 4 {
			t.bo.PutUint16(b[p+2:], 7)
			t.bo.PutUint32(b[p+4:], 1)
		}
	}
	if e, ok := ifd0.find(tifftag.ExifIFD); ok {
		if p := e.pos - t.base; p >= 0 && p+12 <= int64(len(head)) {
			t.bo.PutUint16(b[p+2:], 4)
			t.bo.PutUint32(b[p+4:], 1)
			t.bo.PutUint32(b[p+8:], uint32(at))
		}
	}
	return b
}

// checkData flags raw data (strips or tiles of d) that ends past the end
// of the file.
func (o *own) checkData(t *tiffBlock, d *ifd) {
	if d.dataEnd >= 0 && t.base+d.dataEnd > t.src.size && o.truncated == "" {
		o.truncated = fmt.Sprintf("the raw image data ends at byte %d, past the end of the %d-byte file", t.base+d.dataEnd, t.src.size)
	}
	// A DNG writer lists every strip or tile; fewer than the image needs
	// means its data was stripped (exiftool's DNG sample: 1 of 140 tiles).
	if o.dng && d.wantBlocks > 0 && d.blocks >= 0 && d.blocks < d.wantBlocks && o.truncated == "" {
		o.truncated = fmt.Sprintf("the %d×%d image lists %d of the %d data blocks it needs", d.width, d.height, d.blocks, d.wantBlocks)
	}
}

// panasonic reads the RW2 IFD0 sensor tags (ExifTool PanasonicRaw:
// SensorWidth 0x02, SensorHeight 0x03, Top/Left/Bottom/RightBorder
// 0x04..0x07).
func panasonic(t *tiffBlock, d *ifd, o *own) {
	v := map[uint16]int64{}
	for _, tag := range []uint16{tifftag.PanasonicSensorWidth, tifftag.PanasonicSensorHeight, tifftag.PanasonicTopBorder, tifftag.PanasonicLeftBorder, tifftag.PanasonicBottomBorder, tifftag.PanasonicRightBorder} {
		if e, ok := d.find(tag); ok {
			v[tag] = t.num(e)
		}
	}
	if w, h := v[tifftag.PanasonicSensorWidth], v[tifftag.PanasonicSensorHeight]; w > 0 && h > 0 {
		o.rawW, o.rawH = w, h
		if r, l, b, tp := v[tifftag.PanasonicRightBorder], v[tifftag.PanasonicLeftBorder], v[tifftag.PanasonicBottomBorder], v[tifftag.PanasonicTopBorder]; r > l && b > tp && l >= 0 && tp >= 0 {
			o.w, o.h = r-l, b-tp
		}
	}
}

// sonyVariant names the ARW raw encoding from SonyRawFileType (0x7000:
// 0/1 uncompressed 14/12-bit, 2 compressed (lossy), 3/4 lossless) or the
// raw IFD Compression (1, 32767 Sony ARW compressed, 7 lossless JPEG).
func sonyVariant(d *ifd) string {
	switch d.sonyRawType {
	case 0, 1:
		return "uncompressed"
	case 2:
		return "compressed"
	case 3, 4:
		return "lossless"
	}
	switch d.compression {
	case 1:
		return "uncompressed"
	case 32767:
		return "compressed"
	case 7:
		return "lossless"
	}
	return ""
}

// jpegSOF3 reads the lossless-JPEG (SOF3) frame header of the CR2 raw
// strip at off: precision, width × components, height (ITU-T T.81 H).
func jpegSOF3(src *source, off int64) (bits int, w, h int64) {
	b, err := src.bytes(off, 2)
	if err != nil || b[0] != 0xff || b[1] != 0xd8 {
		return 0, 0, 0
	}
	for pos, i := off+2, 0; i < 32; i++ {
		m, err := src.bytes(pos, 4)
		if err != nil || m[0] != 0xff {
			return 0, 0, 0
		}
		l := int64(binary.BigEndian.Uint16(m[2:]))
		if m[1] == 0xc3 {
			f, err := src.bytes(pos+4, 6)
			if err != nil {
				return 0, 0, 0
			}
			be := binary.BigEndian
			return int(f[0]), int64(be.Uint16(f[3:])) * int64(f[5]), int64(be.Uint16(f[1:]))
		}
		if m[1] == 0xda || l < 2 {
			return 0, 0, 0
		}
		pos += 2 + l
	}
	return 0, 0, 0
}

// parseCR3File reads a Canon CR3.
func parseCR3File(src *source, o *own) {
	c := parseCR3(src)
	o.make = "Canon"
	tiffAt := func(i int) (*tiffBlock, []byte) {
		pos, n := c.cmt[i][0], c.cmt[i][1]
		if n < 8 {
			return nil, nil
		}
		t, ok := newTIFFBlock(src, pos, pos+n)
		if !ok {
			return nil, nil
		}
		b, err := src.bytes(pos, min(n, maxExifBlob))
		if err != nil {
			return t, nil
		}
		return t, b
	}
	// CMT2 (the Exif IFD, as a TIFF of its own) first, so that its
	// DateTimeOriginal wins over CMT1's DateTime.
	if _, b := tiffAt(1); b != nil {
		o.mergeExif(decodeExif(b, "CR3 CMT2", false))
	}
	// CMT1: IFD0 (Make, Model, Orientation, DateTime).
	if t, b := tiffAt(0); t != nil {
		if d, ok := t.readIFD(t.ifd0); ok {
			if d.make != "" {
				o.make = d.make
			}
			o.model = d.model
			o.orientation = d.orientation
		}
		if b != nil {
			o.mergeExif(decodeExif(b, "CR3 CMT1", false))
		}
	}
	// CMT3: the Canon maker note, as a TIFF whose IFD0 is the note.
	if t, _ := tiffAt(2); t != nil {
		_, _, w, h, area, lens := canonSensorInfo(t, t.ifd0)
		o.w, o.h, o.sensorArea = w, h, area
		if o.exif.Lens == "" {
			o.exif.Lens = lens
		}
	}
	tr := c.rawTrack()
	if tr == nil {
		return
	}
	x := tr.crx
	o.crx = &x
	o.rawW, o.rawH = int64(x.Width), int64(x.Height)
	o.bps, o.samples = x.Bits, 1
	o.variant = crxVariant(x)
	if tr.chunkOff >= 0 && tr.sampleSize > 0 && tr.chunkOff+tr.sampleSize > src.size {
		o.truncated = fmt.Sprintf("the raw track's data ends at byte %d, past the end of the %d-byte file", tr.chunkOff+tr.sampleSize, src.size)
	}
	if x.Version == 0x200 && libraw.VersionNumber() < libraw021 {
		// LibRaw 0.20 opens it, but its crxLoadRaw decodes only crx
		// version 0x100; version 0x200 (the C-RAW of the EOS R5/R6/R3/
		// 1D X Mark III generation) arrived with the 202101 snapshot, 0.21.
		o.unsupported = "lossy CR3 (C-RAW, crx version 0x200) needs LibRaw 0.21 or later"
	}
}

// mergeExif keeps the fields already found and adds the others from r.
func (o *own) mergeExif(r exifResult) {
	o.haveExif = true
	o.warnings = append(o.warnings, r.warnings...)
	e := &o.exif
	if e.Make == "" {
		e.Make, e.Model = r.Make, r.Model
	}
	if e.Lens == "" {
		e.Lens = r.Lens
	}
	if e.DateTime.IsZero() {
		e.DateTime = r.DateTime
	}
	e.Dates.merge(r.Dates)
	if e.ExposureTime == 0 {
		e.ExposureTime = r.ExposureTime
	}
	if e.FNumber == 0 {
		e.FNumber = r.FNumber
	}
	if e.FocalLength == 0 {
		e.FocalLength = r.FocalLength
	}
	if e.ISO == 0 {
		e.ISO = r.ISO
	}
	if e.orientation == 0 {
		e.orientation = r.orientation
	}
}

// onlyRaw reports whether no IFD of all but raw holds an image (has a
// size).
func onlyRaw(all []*ifd, raw *ifd) bool {
	for _, d := range all {
		if d != raw && (d.width > 0 || d.height > 0) {
			return false
		}
	}
	return true
}
