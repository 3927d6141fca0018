package header

import (
	"encoding/binary"
	"encoding/hex"
)

// Canon CR3 is an ISO base media file (ISO/IEC 14496-12) with brand "crx ".
// Layout used here (Laurent Clévy, "Describing the Canon Raw v3 file
// format"; LibRaw src/metadata/cr3_parser.cpp):
//
//	moov/uuid(85c0b687-820f-11e0-8111-f4ce462b6a48)/CMT1..CMT4  TIFF blocks
//	moov/trak/mdia/minf/stbl/stsd/CRAW   sample entry: 82 bytes, then boxes
//	    .../CRAW/CMP1                    crx image header (crxParseImageHeader)
//	moov/trak/mdia/minf/stbl/stsz, co64  size and offset of the track's sample
const canonUUID = "85c0b687820f11e08111f4ce462b6a48"

const (
	maxBoxes    = 4096 // boxes visited per file
	maxBoxDepth = 10
)

// CRX describes the crx image header of a CR3 raw track (CMP1 box), as
// LibRaw's crxParseImageHeader reads it. Offsets are relative to the CMP1
// payload (after the 8-byte box header), all big-endian; the payload starts
// with 4 bytes (0xff00/0xff10 and header size 0x30) before Version.
type CRX struct {
	Version               int // u16 at 4: 0x100 (crx v1) or 0x200 (crx v2, EOS R5/R6/1D X III C-RAW)
	Width, Height         int // u32 at 8, 12: full raw size in pixels
	TileWidth, TileHeight int // u32 at 16, 20
	Bits                  int // byte 24: bits per sample
	Planes                int // byte 25 >> 4: 4 for Bayer
	CFALayout             int // byte 25 & 15
	EncType               int // byte 26 >> 4
	ImageLevels           int // byte 26 & 15: wavelet levels; 0 = lossless RAW, >0 = lossy C-RAW
	HasTileCols           int // byte 27 >> 7
	HasTileRows           int // (byte 27 >> 6) & 1
	MdatHdrSize           int // u32 at 28
}

// cr3Info is what the box walk found.
type cr3Info struct {
	cmt    [4][2]int64 // file offset and length of CMT1..CMT4 payloads
	tracks []cr3Track
}

type cr3Track struct {
	crx        CRX
	hasCRX     bool
	sampleSize int64 // stsz: size of the first sample, -1 unknown
	chunkOff   int64 // stco/co64: offset of the first chunk, -1 unknown
}

type boxWalker struct {
	src   *source
	n     int
	info  cr3Info
	track *cr3Track
}

// parseCR3 walks the boxes of the whole file.
func parseCR3(src *source) *cr3Info {
	w := &boxWalker{src: src}
	w.walk(0, src.size, 0, "")
	return &w.info
}

// walk visits the boxes in [start, end) of the container named parent.
// A box claiming to reach past end is cut at end (a truncated file keeps
// what it has); a box smaller than its header stops the walk.
func (w *boxWalker) walk(start, end int64, depth int, parent string) {
	if depth > maxBoxDepth {
		return
	}
	for pos := start; pos+8 <= end && w.n < maxBoxes; {
		w.n++
		h, err := w.src.bytes(pos, 8)
		if err != nil {
			return
		}
		size := int64(binary.BigEndian.Uint32(h))
		typ := string(h[4:8])
		hdr := int64(8)
		switch size {
		case 1:
			b, err := w.src.bytes(pos+8, 8)
			if err != nil {
				return
			}
			u := binary.BigEndian.Uint64(b)
			if u > uint64(end) {
				u = uint64(end)
			}
			size, hdr = int64(u), 16
		case 0:
			size = end - pos
		}
		if size < hdr {
			return
		}
		boxEnd := end
		if size <= end-pos {
			boxEnd = pos + size
		}
		w.box(typ, pos, pos+hdr, boxEnd, depth, parent)
		if size > end-pos {
			return
		}
		pos += size
	}
}

func (w *boxWalker) box(typ string, pos, body, end int64, depth int, parent string) {
	switch typ {
	case "moov", "mdia", "minf", "stbl":
		w.walk(body, end, depth+1, typ)
	case "trak":
		w.info.tracks = append(w.info.tracks, cr3Track{sampleSize: -1, chunkOff: -1})
		w.track = &w.info.tracks[len(w.info.tracks)-1]
		w.walk(body, end, depth+1, typ)
		w.track = nil
	case "uuid":
		id, err := w.src.bytes(body, 16)
		if err == nil && hex.EncodeToString(id) == canonUUID && parent == "moov" {
			w.walk(body+16, end, depth+1, "canon")
		}
	case "CMT1", "CMT2", "CMT3", "CMT4":
		if parent == "canon" {
			w.info.cmt[typ[3]-'1'] = [2]int64{body, end - body}
		}
	case "stsd": // full box: version/flags, entry count, then entries
		w.walk(body+8, end, depth+1, typ)
	case "CRAW": // sample entry: 82 bytes of fields, then boxes
		if parent == "stsd" {
			w.walk(body+82, end, depth+1, typ)
		}
	case "CMP1":
		if parent == "CRAW" && w.track != nil {
			if b, err := w.src.bytes(body, 32); err == nil && end-body >= 32 {
				w.track.crx = parseCMP1(b)
				w.track.hasCRX = true
			}
		}
	case "stsz": // version/flags, sample_size, sample_count, [sizes]
		if w.track != nil {
			if b, err := w.src.bytes(body, 16); err == nil && end-body >= 12 {
				s := int64(binary.BigEndian.Uint32(b[4:]))
				if s == 0 && end-body >= 16 && binary.BigEndian.Uint32(b[8:]) > 0 {
					s = int64(binary.BigEndian.Uint32(b[12:]))
				}
				w.track.sampleSize = s
			}
		}
	case "co64", "stco": // version/flags, entry_count, offsets
		if w.track != nil {
			n := int64(4)
			if typ == "co64" {
				n = 8
			}
			if b, err := w.src.bytes(body, 8+n); err == nil && end-body >= 8+n && binary.BigEndian.Uint32(b[4:]) > 0 {
				if n == 8 {
					if v := binary.BigEndian.Uint64(b[8:]); v < 1<<62 {
						w.track.chunkOff = int64(v)
					}
				} else {
					w.track.chunkOff = int64(binary.BigEndian.Uint32(b[8:]))
				}
			}
		}
	}
}

// parseCMP1 decodes the crx image header; p holds the first 32 bytes of
// the CMP1 payload.
func parseCMP1(p []byte) CRX {
	be := binary.BigEndian
	return CRX{
		Version:     int(be.Uint16(p[4:])),
		Width:       int(be.Uint32(p[8:]) & 0x7fffffff),
		Height:      int(be.Uint32(p[12:]) & 0x7fffffff),
		TileWidth:   int(be.Uint32(p[16:]) & 0x7fffffff),
		TileHeight:  int(be.Uint32(p[20:]) & 0x7fffffff),
		Bits:        int(p[24]),
		Planes:      int(p[25] >> 4),
		CFALayout:   int(p[25] & 15),
		EncType:     int(p[26] >> 4),
		ImageLevels: int(p[26] & 15),
		HasTileCols: int(p[27] >> 7),
		HasTileRows: int(p[27]>>6) & 1,
		MdatHdrSize: int(be.Uint32(p[28:]) & 0x7fffffff),
	}
}

// rawTrack is the track whose CMP1 has the largest width (the full-size
// raw; CR3 files also hold a small 1624×1080 raw and a JPEG track).
func (c *cr3Info) rawTrack() *cr3Track {
	var best *cr3Track
	for i := range c.tracks {
		t := &c.tracks[i]
		if t.hasCRX && (best == nil || t.crx.Width > best.crx.Width) {
			best = t
		}
	}
	return best
}

// crxVariant returns "CRAW" for lossy C-RAW and "RAW" for lossless: C-RAW
// is wavelet-coded, so its header has ImageLevels > 0; lossless RAW has
// none (verified on the EOS M50, EOS R and EOS R6 RAW and EOS R6 C-RAW
// headers in testdata, against exiftool's Canon Quality tag).
func crxVariant(h CRX) string {
	if h.ImageLevels > 0 {
		return "CRAW"
	}
	return "RAW"
}
