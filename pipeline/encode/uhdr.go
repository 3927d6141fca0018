package encode

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"io"
	"math"
	"strconv"
)

// Ultra HDR: a JPEG (the SDR base, what every reader shows) followed by a
// second JPEG, the gain map, that takes the base to an HDR rendition on a
// display with headroom above SDR white. The container is Android's
// "Ultra HDR Image Format v1.0" (developer.android.com/media/platform/
// hdr-image-format): the primary image's XMP names the two items
// (Container:Directory, Item:Semantic Primary and GainMap, the gain map's
// Item:Length), an MPF APP2 segment (CIPA DC-007 "Multi-Picture Format")
// lists both images, and the gain map's own XMP holds the hdrgm
// parameters; both images also carry the ISO 21496-1 gain map metadata
// in an APP2 segment (the primary its version only, the gain map the
// whole record), as libultrahdr writes it.

// GainMap is the metadata of a gain map, one channel (the same for R, G
// and B). Min and Max are the log2 of the smallest and largest content
// boost the map encodes (hdrgm:GainMapMin/Max), Gamma the map's gamma
// (hdrgm:Gamma), OffsetSDR and OffsetHDR the offsets added to the base's
// and the HDR rendition's linear values (hdrgm:OffsetSDR/HDR), and
// CapacityMin/Max the log2 of the display boosts (HDR peak over SDR
// white) at which the map starts to apply and applies fully
// (hdrgm:HDRCapacityMin/Max). A reader computes, per pixel and channel,
// with r the map's sample in [0, 1]:
//
//	G = Min·(1 − r^(1/Gamma)) + Max·r^(1/Gamma)
//	HDR = (SDR + OffsetSDR)·2^(G·W) − OffsetHDR
//
// SDR and HDR linear (the base's transfer function undone), W the weight
// clamp((log2(display boost) − CapacityMin)/(CapacityMax − CapacityMin), 0, 1).
type GainMap struct {
	Min, Max                 float64
	Gamma                    float64
	OffsetSDR, OffsetHDR     float64
	CapacityMin, CapacityMax float64
}

// UHDROptions are the settings of an Ultra HDR encode: the base JPEG's
// quality (1..100) and chroma subsampling ("" for JPEGSubsamplingFor),
// the gain map JPEG's quality, and the gain map's metadata.
type UHDROptions struct {
	Quality        int
	Subsampling    string
	GainMapQuality int
	GainMap        GainMap
}

// ISO21496URN starts the payload of the APP2 segment that holds ISO
// 21496-1 gain map metadata (with its NUL).
const ISO21496URN = "urn:iso:std:iso:ts:21496:-1\x00"

// mpfSize is the MPF APP2 payload that UltraHDR writes: "MPF\0", the
// TIFF header (8 bytes), the MP Index IFD (count, 3 entries of 12 bytes,
// next-IFD offset) and two 16-byte MP entries.
const mpfSize = 4 + 8 + 2 + 3*12 + 4 + 2*16

// UltraHDR writes an Ultra HDR JPEG to w: the primary image, base (8-bit
// samples in the space of icc, as JPEG takes them) encoded with
// libjpeg-turbo as JPEGRows does, with EXIF(md), the XMP packet of md
// (unless md.Strip) joined with the gain map's container directory, the
// ICC profile, the ISO 21496-1 version segment and the MPF index; then
// the gain map, gain (one byte a pixel, the encoded recovery
// r^Gamma·255 of GainMap), a greyscale JPEG at o.GainMapQuality with its
// hdrgm XMP and ISO 21496-1 record. The MPF entries give each image's
// size and the gain map's offset from the MPF segment's TIFF header
// (CIPA DC-007 §5.2.3.3). The primary image is held in memory until its
// MPF offsets are filled in (UHDRWorkingBytes).
func UltraHDR(w io.Writer, base image.Image, gain *image.Gray, o UHDROptions, icc []byte, md Metadata) error {
	if base.Bounds().Empty() || gain == nil || gain.Bounds().Empty() {
		return errors.New("encode: empty image")
	}
	g := o.GainMap
	if !(g.Max > g.Min) || !(g.Gamma > 0) || !(g.CapacityMax > g.CapacityMin) || math.IsInf(g.Max, 0) || math.IsInf(g.Min, 0) {
		return fmt.Errorf("encode: gain map metadata %+v: want Min < Max, Gamma > 0, CapacityMin < CapacityMax", g)
	}
	// The gain map JPEG.
	var gm bytes.Buffer
	iso := iso21496Record(g)
	gmSegs := appendSegment(nil, markerAPP1, []byte(xmpJPEGSig), gainMapXMP(g))
	gmSegs = appendSegment(gmSegs, markerAPP2, []byte(ISO21496URN), iso)
	gb := gain.Bounds()
	gw := gb.Dx()
	grey := RowsRGB8{W: gw, H: gb.Dy(), Row: func(y int, dst []byte) {
		copy(dst[:gw], gain.Pix[gain.PixOffset(gb.Min.X, gb.Min.Y+y):])
	}}
	if err := jpegMarkers(&gm, grey, JPEGOptions{Quality: o.GainMapQuality}, splitSegments(gmSegs), true); err != nil {
		return err
	}
	// The primary image: its XMP names the gain map's length.
	x := md.XMP
	if md.Strip {
		x = XMP{}
	}
	segs, err := jpegHeaderSegments(icc, md, xmpPacket(x, primaryContainer(gm.Len())))
	if err != nil {
		return err
	}
	segs = appendSegment(segs, markerAPP2, []byte(ISO21496URN), []byte{0, 0, 0, 0})
	mpfAt := 2 + len(segs) // after SOI and the segments before it
	segs = appendSegment(segs, markerAPP2, make([]byte, mpfSize))
	var primary bytes.Buffer
	if err := jpegMarkers(&primary, ImageRows8(base), JPEGOptions{Quality: o.Quality, Subsampling: o.Subsampling}, splitSegments(segs), false); err != nil {
		return err
	}
	p := primary.Bytes()
	if len(p) < mpfAt+4+mpfSize || p[mpfAt] != 0xFF || p[mpfAt+1] != markerAPP2 {
		return errors.New("encode: the MPF segment is not where it was put")
	}
	tiffStart := mpfAt + 4 + 4 // FF E2, length, "MPF\0"
	if uint64(len(p))+uint64(gm.Len()) > math.MaxUint32 {
		return fmt.Errorf("encode: Ultra HDR file of %d bytes: MPF offsets are 32-bit", len(p)+gm.Len())
	}
	copy(p[mpfAt+4:], mpfPayload(uint32(len(p)), uint32(gm.Len()), uint32(len(p)-tiffStart)))
	if _, err := w.Write(p); err != nil {
		return err
	}
	_, err = w.Write(gm.Bytes())
	return err
}

// UHDRWorkingBytes is the memory in bytes of UltraHDR for a width×height
// base and a mapW×mapH gain map at subsampling s and quality q (besides
// the images it is given): libjpeg's working memory for both images
// (JPEGWorkingBytes: the coefficients of one of at most 4 MP) and the encoded primary image and gain map, held
// (counted at 1 byte a pixel, far above what quality 100 gives).
func UHDRWorkingBytes(width, height, mapW, mapH int, s string, q int) int64 {
	return JPEGWorkingBytes(width, height, s, q) + int64(width)*int64(height) +
		3*int64(mapW)*int64(mapH) + int64(3*MaxJPEGRows*mapW)
}

// mpfPayload is the MPF APP2 payload: big-endian TIFF header, the MP
// Index IFD with MPFVersion "0100", NumberOfImages 2 and the MP Entry
// array (offset 50 from the TIFF header), then the two entries: the
// primary image (attribute 0x030000, Baseline MP Primary Image, JPEG; its
// offset 0 by definition) and the gain map (attribute 0) at
// secondOffset, each with its size in bytes (CIPA DC-007 §5.2.3).
func mpfPayload(primarySize, secondSize, secondOffset uint32) []byte {
	b := make([]byte, 0, mpfSize)
	be := binary.BigEndian
	b = append(b, "MPF\x00MM\x00\x2a"...)
	b = be.AppendUint32(b, 8) // the IFD follows the header
	b = be.AppendUint16(b, 3)
	entry := func(tag, typ uint16, count uint32, value []byte) {
		b = be.AppendUint16(b, tag)
		b = be.AppendUint16(b, typ)
		b = be.AppendUint32(b, count)
		b = append(b, value...)
	}
	entry(0xB000, 7, 4, []byte("0100"))
	entry(0xB001, 4, 1, be.AppendUint32(nil, 2))
	entry(0xB002, 7, 2*16, be.AppendUint32(nil, 8+2+3*12+4))
	b = be.AppendUint32(b, 0) // no next IFD
	b = be.AppendUint32(b, 0x030000)
	b = be.AppendUint32(b, primarySize)
	b = be.AppendUint32(b, 0)
	b = be.AppendUint32(b, 0) // dependent images: none
	b = be.AppendUint32(b, 0)
	b = be.AppendUint32(b, secondSize)
	b = be.AppendUint32(b, secondOffset)
	b = be.AppendUint32(b, 0)
	return b
}

// iso21496Denominator is the common denominator of the ISO 21496-1
// record's fractions.
const iso21496Denominator = 1 << 16

// iso21496Record is the ISO 21496-1 gain map metadata of g, laid out as
// libultrahdr writes it: minimum and writer version 0 (16 bits each),
// flags (0x40: the map applies in the base's colour space; 0x08: one
// common denominator; one channel), the denominator, the base and
// alternate HDR headroom (log2, g.CapacityMin and g.CapacityMax), then
// the channel's gain map min and max (log2, signed), gamma, base and
// alternate offsets (signed), all numerators of the denominator,
// big-endian 32-bit.
func iso21496Record(g GainMap) []byte {
	be := binary.BigEndian
	b := []byte{0, 0, 0, 0, 0x40 | 0x08}
	b = be.AppendUint32(b, iso21496Denominator)
	u := func(v float64) { b = be.AppendUint32(b, uint32(math.Round(max(v, 0)*iso21496Denominator))) }
	s := func(v float64) { b = be.AppendUint32(b, uint32(int32(math.Round(v*iso21496Denominator)))) }
	u(g.CapacityMin)
	u(g.CapacityMax)
	s(g.Min)
	s(g.Max)
	u(g.Gamma)
	s(g.OffsetSDR)
	s(g.OffsetHDR)
	return b
}

const (
	nsHDRGM     = "http://ns.adobe.com/hdr-gain-map/1.0/"
	nsContainer = "http://ns.google.com/photos/1.0/container/"
	nsItem      = "http://ns.google.com/photos/1.0/container/item/"
)

// primaryContainer is what the primary image's XMP adds: hdrgm:Version
// and the container directory of the two items, the gain map's length in
// bytes.
func primaryContainer(gainMapLen int) xmpExtra {
	return xmpExtra{
		NS:    "\n    xmlns:hdrgm=\"" + nsHDRGM + "\"\n    xmlns:Container=\"" + nsContainer + "\"\n    xmlns:Item=\"" + nsItem + "\"",
		Attrs: "\n    hdrgm:Version=\"1.0\"",
		Body: "   <Container:Directory>\n    <rdf:Seq>\n" +
			"     <rdf:li rdf:parseType=\"Resource\">\n      <Container:Item Item:Semantic=\"Primary\" Item:Mime=\"image/jpeg\"/>\n     </rdf:li>\n" +
			"     <rdf:li rdf:parseType=\"Resource\">\n      <Container:Item Item:Semantic=\"GainMap\" Item:Mime=\"image/jpeg\" Item:Length=\"" + strconv.Itoa(gainMapLen) + "\"/>\n     </rdf:li>\n" +
			"    </rdf:Seq>\n   </Container:Directory>\n",
	}
}

// gainMapXMP is the gain map image's XMP packet: the hdrgm attributes of g.
func gainMapXMP(g GainMap) []byte {
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 8, 64) }
	var b bytes.Buffer
	b.WriteString("<?xpacket begin=\"\ufeff\" id=\"W5M0MpCehiHzreSzNTczkc9d\"?>\n")
	b.WriteString("<x:xmpmeta xmlns:x=\"adobe:ns:meta/\">\n")
	b.WriteString(" <rdf:RDF xmlns:rdf=\"http://www.w3.org/1999/02/22-rdf-syntax-ns#\">\n")
	b.WriteString("  <rdf:Description rdf:about=\"\" xmlns:hdrgm=\"" + nsHDRGM + "\"\n")
	b.WriteString("    hdrgm:Version=\"1.0\"\n")
	b.WriteString("    hdrgm:GainMapMin=\"" + f(g.Min) + "\"\n")
	b.WriteString("    hdrgm:GainMapMax=\"" + f(g.Max) + "\"\n")
	b.WriteString("    hdrgm:Gamma=\"" + f(g.Gamma) + "\"\n")
	b.WriteString("    hdrgm:OffsetSDR=\"" + f(g.OffsetSDR) + "\"\n")
	b.WriteString("    hdrgm:OffsetHDR=\"" + f(g.OffsetHDR) + "\"\n")
	b.WriteString("    hdrgm:HDRCapacityMin=\"" + f(g.CapacityMin) + "\"\n")
	b.WriteString("    hdrgm:HDRCapacityMax=\"" + f(g.CapacityMax) + "\"\n")
	b.WriteString("    hdrgm:BaseRenditionIsHDR=\"False\"/>\n")
	b.WriteString(" </rdf:RDF>\n</x:xmpmeta>\n<?xpacket end=\"r\"?>")
	return b.Bytes()
}
