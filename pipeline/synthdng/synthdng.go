// Package synthdng writes synthetic, valid DNG 1.4 files whose pixel content is
// known exactly, so tests can compare a converter's colour and orientation
// handling with analytic ground truth, and benchmarks can create large
// (12–61 MP) inputs without shipping them.
//
// Files are little-endian TIFF with RGGB CFA data: uncompressed 16-bit
// samples in strips, produced row by row from Spec.Scene while they are
// written (memory use independent of image size), or lossless JPEG tiles
// (Spec.Compression 7, DNG 1.4 §"Compression"), encoded in memory first.
// A JPEG preview (Spec.Preview) goes in a SubIFD beside the raw one, as
// cameras' DNGs carry it.
//
// Ground truth helpers: ChartScene renders an upright chart of flat linear
// sRGB patches into stored CFA data for any EXIF orientation, using the
// colour matrix exactly as written (see QuantizeColorMatrix), and NeutralFor
// gives the matching AsShotNeutral.
//
// Tag numbers and semantics follow the TIFF 6.0, TIFF/EP, EXIF 2.32 and
// Adobe DNG 1.4.0.0 specifications; the colour constants follow
// IEC 61966-2-1 (sRGB).
//
// How LibRaw 0.20.2 reads these files (measured; pinned by this package's tests):
//   - Orientation is taken from IFD0; only if IFD0 has none or 1 does LibRaw
//     fall back to an Orientation in the raw SubIFD. Flip code =
//     "50132467"[orientation&7]-'0'. dcraw_emu output is rotated upright.
//   - BaselineExposure is reported by raw-identify but not applied.
//   - DefaultCropOrigin/Size are not applied (output is the full CFA size).
//   - dcraw_emu -4 -W -w -o 0: out_c = (DN−black)·m_c·65535/(white−black),
//     m_c = (1/AsShotNeutral_c) / min_k(1/AsShotNeutral_k), to within 1 DN;
//     with -o 1 a ChartScene patch comes out as rgb·gain·65535 (±0.2%).
//   - By default (adjust_maximum_thr 0.75) LibRaw replaces WhiteLevel by the
//     largest sample when that lies between 75% and 100% of the range, which
//     stretches the output; pass -c 0 (adjust_maximum_thr = 0) or keep scenes
//     below 0.75.
package synthdng

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/jpeg"
	"io"
	"math"
	"math/bits"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/rawbatch/rawbatch/pipeline/tifftag"
)

// Defaults applied by Write to zero fields of Spec.
const (
	DefaultMake       = "rawbatch"
	DefaultModel      = "Synthetic"
	DefaultWhiteLevel = 65535
	// PreviewLongEdge is the long edge, in pixels, of the 8-bit RGB preview
	// written in IFD0 when Spec.ThumbnailIFD0 is set (smaller if the raw
	// image is smaller).
	PreviewLongEdge = 256
	// Software is the value of the Software tag (305) in IFD0.
	Software = "rawbatch synthdng"
)

// stripTargetBytes is the approximate size of one raw strip; RowsPerStrip is
// derived from it unless Spec.RowsPerStrip is set.
const stripTargetBytes = 256 << 10

// DefaultTileSize is the tile width and length, in CFA pixels, of a
// lossless JPEG raw image (Spec.Compression 7) when Spec.TileSize is 0:
// Adobe's DNG converter writes 256×256 tiles.
const DefaultTileSize = 256

// PreviewQuality is the quality (image/jpeg, 1..100) of Spec.Preview's
// JPEG.
const PreviewQuality = 90

// Spec describes a synthetic DNG. CFA data is one sample per pixel, RGGB
// Bayer (CFAPattern 0,1,1,2; see CFAColor): uncompressed 16-bit, or
// lossless JPEG (Compression).
type Spec struct {
	// Width, Height are the CFA (stored, sensor-oriented) size in pixels;
	// both must be positive and even. They become ImageWidth (256) and
	// ImageLength (257) of the raw IFD.
	Width, Height int

	// BlackLevel is DNG BlackLevel (tag 50714, one SHORT value, i.e. the same
	// for all CFA channels), in raw DN.
	BlackLevel uint16
	// WhiteLevel is DNG WhiteLevel (tag 50717, SHORT), in raw DN; must exceed
	// BlackLevel. 0 means DefaultWhiteLevel (65535).
	WhiteLevel uint16

	// ColorMatrix1 is DNG ColorMatrix1 (tag 50721): XYZ (D65) → camera RGB,
	// row-major, dimensionless. It is written as SRATIONAL
	// n/ColorMatrixDenominator (see QuantizeColorMatrix). All zero means
	// DefaultColorMatrix. CalibrationIlluminant1 (50778) is always 21 (D65).
	ColorMatrix1 [3][3]float64
	// AsShotNeutral is DNG AsShotNeutral (tag 50728): camera RGB of the scene
	// neutral, max component 1, written as RATIONAL n/NeutralDenominator.
	// All zero means NeutralFor(ColorMatrix1) times AnalogBalance,
	// normalised to max 1. Components must be > 0.
	AsShotNeutral [3]float64
	// AnalogBalance is DNG AnalogBalance (tag 50727): the gains the camera
	// applied to R, G, B before the values were stored, so that XYZ maps
	// to stored camera values by AnalogBalance · ColorMatrix1 (DNG 1.6
	// "Mapping Camera Color Space to CIE XYZ Space"); Scene gives stored
	// values, gains included. Written as RATIONAL n/NeutralDenominator;
	// all zero means no tag (unity). Components must be > 0.
	AnalogBalance [3]float64
	// BaselineExposure is DNG BaselineExposure (tag 50730) in EV, written as
	// SRATIONAL n/BaselineExposureDenominator. Zero is written as 0.
	BaselineExposure float64

	// Orientation is the TIFF/EXIF Orientation (tag 274, SHORT) 1..8 of the
	// main image, written in IFD0 (see DisplayToStored for the semantics);
	// 0 means 1.
	Orientation int

	// Make and Model go to IFD0 Make (271) and Model (272); Model also goes to
	// UniqueCameraModel (50708). Empty means DefaultMake / DefaultModel.
	Make, Model string

	// Scene gives the camera-space linear signal at each stored CFA site
	// (x, y) in [0, 1] relative to WhiteLevel−BlackLevel; c is the CFA colour
	// at that site (0=R, 1=G, 2=B; see CFAColor). The stored value is
	// BlackLevel + round(v·(WhiteLevel−BlackLevel)), clamped to
	// [BlackLevel, WhiteLevel] (NaN → BlackLevel). It is called once per site
	// in row-major order while the file is written (plus a few times per
	// preview pixel when ThumbnailIFD0 is set) and must be safe to call
	// repeatedly with the same arguments. Required.
	Scene func(x, y, c int) float64

	// ThumbnailIFD0, if true, makes IFD0 a small 8-bit RGB preview
	// (NewSubFileType 1, PreviewLongEdge pixels on the long edge, rendered
	// from Scene: white balanced by AsShotNeutral, camera RGB, sRGB-encoded)
	// and puts the raw image in a SubIFD (tag 330) with NewSubFileType 0, as
	// camera-made DNGs do. Otherwise IFD0 is the raw image itself.
	ThumbnailIFD0 bool

	// DefaultCropOrigin and DefaultCropSize are DNG DefaultCropOrigin (50719)
	// and DefaultCropSize (50720) as (x, y) / (width, height) in raw pixels,
	// written (LONG) on the raw IFD only if DefaultCropSize is nonzero.
	DefaultCropOrigin, DefaultCropSize [2]int

	// Optional EXIF, written in an ExifIFD (tag 34665) when any is nonzero.
	// Timestamp → DateTimeOriginal (36867) and IFD0 DateTime (306), formatted
	// "2006:01:02 15:04:05" in Timestamp's own location; ISO →
	// ISOSpeedRatings (34855, SHORT, clamped to 65535); ExposureTime (s) →
	// 33434 (RATIONAL, 1/N when possible); FNumber → 33437 and FocalLength
	// (mm) → 37386 (RATIONAL n/1000).
	Timestamp    time.Time
	ISO          int
	ExposureTime float64
	FNumber      float64
	FocalLength  float64

	// Tags are extra tags of IFD0, the Exif IFD and the GPS IFD (see Tag);
	// one whose number the writer already uses is an error.
	Tags []Tag

	// RowsPerStrip is the TIFF RowsPerStrip (278) of the raw image; 0 picks
	// rows for ~256 KiB strips. Strips are stored contiguously in order.
	// Uncompressed images only.
	RowsPerStrip int

	// Compression is the raw image's TIFF Compression (259): 0 or 1 for
	// uncompressed 16-bit strips, 7 for lossless JPEG tiles (DNG 1.4:
	// TileWidth × TileLength CFA pixels each, a JPEG of TileWidth/2 × TileLength
	// samples of two components, so a JPEG row is a tile row; Predictor;
	// precision and BitsPerSample the bit length of WhiteLevel, e.g. 14 for
	// 16383). With 7, Scene is called from several goroutines at once, and
	// tiles overhanging the right and bottom edges repeat the last column
	// and row.
	Compression int
	// TileSize is TileWidth (322) and TileLength (323) of a compressed raw
	// image, a positive multiple of 16; 0 means DefaultTileSize.
	TileSize int
	// Predictor is the lossless JPEG predictor of Compression 7 tiles
	// (T.81 Table H.1, 1..7); 0 means 1. TablePerComponent gives each of
	// the two components a Huffman table of its own (ids 0 and 1) instead
	// of one they share.
	Predictor         int
	TablePerComponent bool

	// Linear, if true, writes the raw image as LinearRaw (DNG 1.4,
	// PhotometricInterpretation 34892): already demosaiced camera RGB, three
	// 16-bit samples per pixel, uncompressed, no CFA tags, as DNG
	// converters write some cameras' files. Scene is then called for every
	// colour c of every pixel.
	Linear bool

	// Preview, when not nil, is an sRGB preview of the picture in stored
	// orientation (e.g. 1600×1067 for a 6000×4000 raw), written as a
	// baseline JPEG (PreviewQuality, YCbCr 4:2:0) in a SubIFD of its own
	// (NewSubFileType 1, Compression 7, PhotometricInterpretation 6) after
	// the raw SubIFD; it implies ThumbnailIFD0. LibRaw takes the largest
	// preview of the file as its thumbnail, so this one.
	Preview image.Image
}

// resolved is a validated Spec with defaults applied and all derived layout.
type resolved struct {
	Spec
	cm      [3][3]float64 // quantised ColorMatrix1
	neutral [3]float64    // quantised AsShotNeutral
	rps     int           // rows per raw strip
	rowLen  int           // bytes per raw row
	pw, ph  int           // preview size (ThumbnailIFD0)
	tile    int           // tile size (Compression 7)
	tiles   [][]byte      // the encoded tiles, row-major (Compression 7)
	jpeg    []byte        // Preview's JPEG
}

func resolve(s Spec) (*resolved, error) {
	r := &resolved{Spec: s}
	if s.Width <= 0 || s.Height <= 0 || s.Width%2 != 0 || s.Height%2 != 0 {
		return nil, fmt.Errorf("synthdng: size %dx%d must be positive and even", s.Width, s.Height)
	}
	if s.Width > math.MaxUint32/2 || s.Height > math.MaxUint32 {
		return nil, fmt.Errorf("synthdng: size %dx%d too large", s.Width, s.Height)
	}
	if s.Scene == nil {
		return nil, errors.New("synthdng: Spec.Scene is nil")
	}
	if r.WhiteLevel == 0 {
		r.WhiteLevel = DefaultWhiteLevel
	}
	if r.WhiteLevel <= r.BlackLevel {
		return nil, fmt.Errorf("synthdng: WhiteLevel %d must exceed BlackLevel %d", r.WhiteLevel, r.BlackLevel)
	}
	if !ValidOrientation(s.Orientation) {
		return nil, fmt.Errorf("synthdng: invalid EXIF orientation %d (want 0..8)", s.Orientation)
	}
	r.Orientation = normOrientation(s.Orientation)
	if r.Make == "" {
		r.Make = DefaultMake
	}
	if r.Model == "" {
		r.Model = DefaultModel
	}
	if s.ColorMatrix1 == ([3][3]float64{}) {
		r.ColorMatrix1 = DefaultColorMatrix
	}
	r.cm = QuantizeColorMatrix(r.ColorMatrix1)
	for i := range 3 {
		for j := range 3 {
			if _, err := fixedSRational(r.ColorMatrix1[i][j], ColorMatrixDenominator); err != nil {
				return nil, err
			}
		}
	}
	if s.AnalogBalance != ([3]float64{}) {
		for _, v := range s.AnalogBalance {
			if !(v > 0) || v > 1e3 {
				return nil, fmt.Errorf("synthdng: AnalogBalance %v must be positive", s.AnalogBalance)
			}
		}
		r.AnalogBalance = QuantizeNeutral(s.AnalogBalance)
	}
	if s.AsShotNeutral == ([3]float64{}) {
		r.neutral = NeutralFor(r.ColorMatrix1)
		if ab := r.AnalogBalance; ab != ([3]float64{}) {
			var n [3]float64
			for i := range n {
				n[i] = r.neutral[i] * ab[i]
			}
			k := max(n[0], n[1], n[2])
			r.neutral = QuantizeNeutral([3]float64{n[0] / k, n[1] / k, n[2] / k})
		}
	} else {
		r.neutral = QuantizeNeutral(s.AsShotNeutral)
	}
	for _, v := range r.neutral {
		if !(v > 0) || v > 1e3 {
			return nil, fmt.Errorf("synthdng: AsShotNeutral %v must be positive (max component 1)", s.AsShotNeutral)
		}
	}
	if _, err := fixedSRational(s.BaselineExposure, BaselineExposureDenominator); err != nil {
		return nil, err
	}
	if cs := s.DefaultCropSize; cs != ([2]int{}) {
		co := s.DefaultCropOrigin
		if cs[0] <= 0 || cs[1] <= 0 || co[0] < 0 || co[1] < 0 ||
			co[0]+cs[0] > s.Width || co[1]+cs[1] > s.Height {
			return nil, fmt.Errorf("synthdng: default crop origin %v size %v outside %dx%d", co, cs, s.Width, s.Height)
		}
	}
	if s.ExposureTime != 0 {
		if _, _, err := exposureRational(s.ExposureTime); err != nil {
			return nil, err
		}
	}
	for _, v := range []float64{s.FNumber, s.FocalLength} {
		if v != 0 {
			if _, err := fixedRational(v, 1000); err != nil {
				return nil, err
			}
		}
	}
	if s.ISO < 0 {
		return nil, fmt.Errorf("synthdng: negative ISO %d", s.ISO)
	}
	switch s.Compression {
	case 0, 1:
		r.Compression = 1
	case 7:
		r.tile = s.TileSize
		if r.tile == 0 {
			r.tile = DefaultTileSize
		}
		if r.tile < 0 || r.tile%16 != 0 || r.tile > 1<<15 {
			return nil, fmt.Errorf("synthdng: tile size %d must be a positive multiple of 16", s.TileSize)
		}
	default:
		return nil, fmt.Errorf("synthdng: compression %d (want 1 or 7)", s.Compression)
	}
	if s.Linear && r.Compression == 7 {
		return nil, errors.New("synthdng: a linear raw image is written uncompressed only")
	}
	if s.Preview != nil {
		r.ThumbnailIFD0 = true
		var buf bytes.Buffer
		if err := jpeg.Encode(&buf, s.Preview, &jpeg.Options{Quality: PreviewQuality}); err != nil {
			return nil, fmt.Errorf("synthdng: preview: %w", err)
		}
		r.jpeg = buf.Bytes()
	}
	r.rowLen = 2 * s.Width * r.samples()
	r.rps = s.RowsPerStrip
	if r.rps <= 0 {
		r.rps = max(1, stripTargetBytes/r.rowLen)
	}
	r.rps = min(r.rps, s.Height)
	if r.ThumbnailIFD0 {
		long := min(PreviewLongEdge, max(s.Width, s.Height))
		if s.Width >= s.Height {
			r.pw = long
			r.ph = max(1, int(math.Round(float64(s.Height)*float64(long)/float64(s.Width))))
		} else {
			r.ph = long
			r.pw = max(1, int(math.Round(float64(s.Width)*float64(long)/float64(s.Height))))
		}
	}
	return r, nil
}

func (r *resolved) hasExif() bool {
	return !r.Timestamp.IsZero() || r.ISO != 0 || r.ExposureTime != 0 || r.FNumber != 0 || r.FocalLength != 0 ||
		len(r.tagsIn(tifftag.DirExif)) > 0
}

func (r *resolved) nStrips() int { return (r.Height + r.rps - 1) / r.rps }

// offsets of the parts of the file that IFDs point at.
type layout struct {
	sub, prev, exif, gps, thumb, jpeg, raw int
}

// buildIFDs returns IFD0, the raw SubIFD (nil unless ThumbnailIFD0) and the
// ExifIFD (nil if no EXIF). IFD sizes do not depend on lay, so the caller
// builds once with a zero layout to measure, then again with real offsets.
func (r *resolved) buildIFDs(lay layout) (ifd0, sub, prev, exif, gps *ifd, err error) {
	ifd0 = &ifd{}
	rawIFD := ifd0
	if r.ThumbnailIFD0 {
		sub = &ifd{}
		rawIFD = sub
		r.previewTags(ifd0, lay)
	}
	if r.jpeg != nil {
		prev = &ifd{}
		r.jpegTags(prev, lay)
	}
	r.rawTags(rawIFD, lay)
	if exif, gps, err = r.fileTags(ifd0, lay); err != nil {
		return nil, nil, nil, nil, nil, err
	}
	if err := r.dngColourTags(ifd0); err != nil {
		return nil, nil, nil, nil, nil, err
	}
	for _, d := range []*ifd{ifd0, sub, prev, exif, gps} {
		if d != nil {
			if err := d.checkUnique(); err != nil {
				return nil, nil, nil, nil, nil, err
			}
		}
	}
	return ifd0, sub, prev, exif, gps, nil
}

// jpegTags makes d the JPEG preview's SubIFD (DNG 1.4 ch. 3, "Preview
// images"): one strip holding the whole JPEG at lay.jpeg.
func (r *resolved) jpegTags(d *ifd, lay layout) {
	b := r.Preview.Bounds()
	d.longs(tifftag.NewSubFileType, 1)
	d.longs(tifftag.ImageWidth, uint32(b.Dx()))
	d.longs(tifftag.ImageLength, uint32(b.Dy()))
	d.shorts(tifftag.BitsPerSample, 8, 8, 8)
	d.shorts(tifftag.Compression, 7)
	d.shorts(tifftag.PhotometricInterpretation, 6) // YCbCr
	d.longs(tifftag.StripOffsets, uint32(lay.jpeg))
	d.shorts(tifftag.SamplesPerPixel, 3)
	d.longs(tifftag.RowsPerStrip, uint32(b.Dy()))
	d.longs(tifftag.StripByteCounts, uint32(len(r.jpeg)))
	d.shorts(tifftag.PlanarConfiguration, 1)
}

// previewTags makes d the reduced-resolution RGB preview of IFD0 (DNG 1.4
// ch. 3, "IFD0"), its pixels at lay.thumb, pointing at the raw SubIFD at
// lay.sub.
func (r *resolved) previewTags(d *ifd, lay layout) {
	d.longs(tifftag.NewSubFileType, 1)
	d.longs(tifftag.ImageWidth, uint32(r.pw))
	d.longs(tifftag.ImageLength, uint32(r.ph))
	d.shorts(tifftag.BitsPerSample, 8, 8, 8)
	d.shorts(tifftag.Compression, 1)
	d.shorts(tifftag.PhotometricInterpretation, 2) // RGB
	d.longs(tifftag.StripOffsets, uint32(lay.thumb))
	d.shorts(tifftag.SamplesPerPixel, 3)
	d.longs(tifftag.RowsPerStrip, uint32(r.ph))
	d.longs(tifftag.StripByteCounts, uint32(3*r.pw*r.ph))
	d.shorts(tifftag.PlanarConfiguration, 1)
	if r.jpeg != nil {
		d.longs(tifftag.SubIFDs, uint32(lay.sub), uint32(lay.prev))
	} else {
		d.longs(tifftag.SubIFDs, uint32(lay.sub))
	}
}

// rawTags describes in d the raw CFA image (NewSubFileType 0): RGGB
// photosites from lay.raw, 16-bit uncompressed in strips of r.rps rows or
// lossless JPEG tiles (r.tiles, stored in order), with its levels and
// default crop.
func (r *resolved) rawTags(d *ifd, lay layout) {
	d.longs(tifftag.NewSubFileType, 0)
	d.longs(tifftag.ImageWidth, uint32(r.Width))
	d.longs(tifftag.ImageLength, uint32(r.Height))
	if r.Linear {
		d.shorts(tifftag.BitsPerSample, 16, 16, 16)
		d.shorts(tifftag.Compression, 1)
		d.shorts(tifftag.PhotometricInterpretation, 34892) // LinearRaw
	} else {
		d.shorts(tifftag.BitsPerSample, uint16(r.bits()))
		d.shorts(tifftag.Compression, uint16(r.Compression))
		d.shorts(tifftag.PhotometricInterpretation, 32803) // CFA (TIFF/EP)
	}
	if r.Compression == 7 {
		offs := make([]uint32, len(r.tiles))
		counts := make([]uint32, len(r.tiles))
		off := lay.raw
		for i, t := range r.tiles {
			offs[i], counts[i] = uint32(off), uint32(len(t))
			off += len(t)
		}
		d.longs(tifftag.TileWidth, uint32(r.tile))
		d.longs(tifftag.TileLength, uint32(r.tile))
		d.longs(tifftag.TileOffsets, offs...)
		d.longs(tifftag.TileByteCounts, counts...)
	} else {
		ns := r.nStrips()
		offs := make([]uint32, ns)
		counts := make([]uint32, ns)
		for i := range ns {
			offs[i] = uint32(lay.raw + i*r.rps*r.rowLen)
			rows := min(r.rps, r.Height-i*r.rps)
			counts[i] = uint32(rows * r.rowLen)
		}
		d.longs(tifftag.StripOffsets, offs...)
		d.longs(tifftag.RowsPerStrip, uint32(r.rps))
		d.longs(tifftag.StripByteCounts, counts...)
	}
	d.shorts(tifftag.SamplesPerPixel, uint16(r.samples()))
	d.shorts(tifftag.PlanarConfiguration, 1)
	if !r.Linear {
		d.shorts(tifftag.CFARepeatPatternDim, 2, 2)
		d.bytes(tifftag.CFAPattern, 0, 1, 1, 2) // RGGB
	}
	d.shorts(tifftag.BlackLevel, r.BlackLevel)
	d.shorts(tifftag.WhiteLevel, r.WhiteLevel)
	if r.DefaultCropSize != ([2]int{}) {
		d.longs(tifftag.DefaultCropOrigin, uint32(r.DefaultCropOrigin[0]), uint32(r.DefaultCropOrigin[1]))
		d.longs(tifftag.DefaultCropSize, uint32(r.DefaultCropSize[0]), uint32(r.DefaultCropSize[1]))
	}
}

// fileTags adds IFD0's whole-file tags to ifd0 (make, model, orientation,
// software, date, the extra image tags of the Spec) and builds the Exif
// and GPS IFDs, which ifd0 points at (lay.exif, lay.gps) when they exist.
func (r *resolved) fileTags(ifd0 *ifd, lay layout) (exif, gps *ifd, err error) {
	ifd0.ascii(tifftag.Make, r.Make)
	ifd0.ascii(tifftag.Model, r.Model)
	ifd0.shorts(tifftag.Orientation, uint16(r.Orientation))
	ifd0.ascii(tifftag.Software, Software)
	if !r.Timestamp.IsZero() {
		ifd0.ascii(tifftag.DateTime, r.Timestamp.Format("2006:01:02 15:04:05"))
	}
	if exif, err = r.buildExif(); err != nil {
		return nil, nil, err
	}
	if exif != nil {
		ifd0.longs(tifftag.ExifIFD, uint32(lay.exif))
	}
	if gps, err = r.buildGPS(); err != nil {
		return nil, nil, err
	}
	if gps != nil {
		ifd0.longs(tifftag.GPSIFD, uint32(lay.gps))
	}
	for _, t := range r.tagsIn(tifftag.DirImage) {
		if err := t.addTo(ifd0); err != nil {
			return nil, nil, err
		}
	}
	return exif, gps, nil
}

// dngColourTags adds IFD0's DNG tags: the versions, UniqueCameraModel, and
// the colour calibration (ColorMatrix1 under D65, AsShotNeutral,
// AnalogBalance when set, BaselineExposure) as fixed-denominator rationals.
func (r *resolved) dngColourTags(ifd0 *ifd) error {
	ifd0.bytes(tifftag.DNGVersion, 1, 4, 0, 0)
	ifd0.bytes(tifftag.DNGBackwardVersion, 1, 1, 0, 0)
	ifd0.ascii(tifftag.UniqueCameraModel, r.Model)
	var cm [18]int32
	for i := range 3 {
		for j := range 3 {
			n, err := fixedSRational(r.ColorMatrix1[i][j], ColorMatrixDenominator)
			if err != nil {
				return err
			}
			cm[2*(3*i+j)] = n
			cm[2*(3*i+j)+1] = ColorMatrixDenominator
		}
	}
	ifd0.srationals(tifftag.ColorMatrix1, cm[:]...)
	var asn [6]uint32
	for i, v := range r.neutral {
		n, err := fixedRational(v, NeutralDenominator)
		if err != nil {
			return err
		}
		asn[2*i], asn[2*i+1] = n, NeutralDenominator
	}
	ifd0.rationals(tifftag.AsShotNeutral, asn[:]...)
	if ab := r.AnalogBalance; ab != ([3]float64{}) {
		var v [6]uint32
		for i := range ab {
			n, err := fixedRational(ab[i], NeutralDenominator)
			if err != nil {
				return err
			}
			v[2*i], v[2*i+1] = n, NeutralDenominator
		}
		ifd0.rationals(tifftag.AnalogBalance, v[:]...)
	}
	be, err := fixedSRational(r.BaselineExposure, BaselineExposureDenominator)
	if err != nil {
		return err
	}
	ifd0.srationals(tifftag.BaselineExposure, be, BaselineExposureDenominator)
	ifd0.shorts(tifftag.CalibrationIlluminant1, 21) // D65 (EXIF LightSource 21)
	return nil
}

func (r *resolved) buildExif() (*ifd, error) {
	if !r.hasExif() {
		return nil, nil
	}
	e := &ifd{}
	e.undefined(tifftag.ExifVersion, []byte("0232"))
	if !r.Timestamp.IsZero() {
		e.ascii(tifftag.DateTimeOriginal, r.Timestamp.Format("2006:01:02 15:04:05"))
	}
	if r.ISO != 0 {
		e.shorts(tifftag.PhotographicSensitivity, uint16(min(r.ISO, math.MaxUint16)))
	}
	if r.ExposureTime != 0 {
		n, d, _ := exposureRational(r.ExposureTime) // validated in resolve
		e.rationals(tifftag.ExposureTime, n, d)
	}
	if r.FNumber != 0 {
		n, _ := fixedRational(r.FNumber, 1000)
		e.rationals(tifftag.FNumber, n, 1000)
	}
	if r.FocalLength != 0 {
		n, _ := fixedRational(r.FocalLength, 1000)
		e.rationals(tifftag.FocalLength, n, 1000)
	}
	for _, t := range r.tagsIn(tifftag.DirExif) {
		if err := t.addTo(e); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// bits is the raw image's BitsPerSample: 16 uncompressed, the bit length
// of WhiteLevel (the lossless JPEG precision, at least 2) compressed.
func (r *resolved) bits() int {
	if r.Compression != 7 {
		return 16
	}
	return max(2, bits.Len16(r.WhiteLevel))
}

// samples is the raw image's samples per pixel: 3 for a linear image,
// else 1.
func (r *resolved) samples() int {
	if r.Linear {
		return 3
	}
	return 1
}

// rawBytes is the size of the raw image data.
func (r *resolved) rawBytes() uint64 {
	if r.Compression != 7 {
		return uint64(r.Width) * uint64(r.Height) * 2 * uint64(r.samples())
	}
	var n uint64
	for _, t := range r.tiles {
		n += uint64(len(t))
	}
	return n
}

// header returns everything before the raw data (TIFF header, IFDs and
// the previews' pixels), whose offset is its length.
func (r *resolved) header() ([]byte, error) {
	// Pass 1: sizes.
	ifd0, sub, prev, exif, gps, err := r.buildIFDs(layout{})
	if err != nil {
		return nil, err
	}
	var lay layout
	pos := 8 + ifd0.size()
	if sub != nil {
		lay.sub = pos
		pos += sub.size()
	}
	if prev != nil {
		lay.prev = pos
		pos += prev.size()
	}
	if exif != nil {
		lay.exif = pos
		pos += exif.size()
	}
	if gps != nil {
		lay.gps = pos
		pos += gps.size()
	}
	if r.ThumbnailIFD0 {
		lay.thumb = pos
		pos = align4(pos + 3*r.pw*r.ph)
	}
	if r.jpeg != nil {
		lay.jpeg = pos
		pos = align4(pos + len(r.jpeg))
	}
	pos = (pos + 15) &^ 15 // start raw data on a 16-byte boundary
	lay.raw = pos
	total := uint64(lay.raw) + r.rawBytes()
	if total > math.MaxUint32 {
		return nil, fmt.Errorf("synthdng: file would be %d bytes, over the 4 GiB TIFF limit", total)
	}

	// Pass 2: real offsets.
	ifd0, sub, prev, exif, gps, err = r.buildIFDs(lay)
	if err != nil {
		return nil, err
	}
	buf := make([]byte, lay.raw)
	copy(buf, "II")
	le.PutUint16(buf[2:], 42)
	le.PutUint32(buf[4:], 8)
	copy(buf[8:], ifd0.encode(8))
	if sub != nil {
		copy(buf[lay.sub:], sub.encode(lay.sub))
	}
	if prev != nil {
		copy(buf[lay.prev:], prev.encode(lay.prev))
		copy(buf[lay.jpeg:], r.jpeg)
	}
	if exif != nil {
		copy(buf[lay.exif:], exif.encode(lay.exif))
	}
	if gps != nil {
		copy(buf[lay.gps:], gps.encode(lay.gps))
	}
	if r.ThumbnailIFD0 {
		r.renderPreview(buf[lay.thumb : lay.thumb+3*r.pw*r.ph])
	}
	return buf, nil
}

// renderPreview fills dst (pw×ph×3 bytes) with a nearest-neighbour,
// white-balanced, sRGB-encoded camera-RGB rendering of Scene in stored
// orientation (IFD0's Orientation tag applies to it as to the raw image).
func (r *resolved) renderPreview(dst []byte) {
	for py := range r.ph {
		y := (py * r.Height / r.ph) &^ 1
		for px := range r.pw {
			x := (px * r.Width / r.pw) &^ 1
			v := [3]float64{r.Scene(x, y, 0), r.Scene(x+1, y, 1), r.Scene(x+1, y+1, 2)}
			for c := range 3 {
				dst[3*(py*r.pw+px)+c] = srgb8(v[c] / r.neutral[c])
			}
		}
	}
}

// srgb8 encodes linear v with the IEC 61966-2-1 transfer function to 8 bits.
func srgb8(v float64) byte {
	if !(v > 0) {
		return 0
	}
	if v >= 1 {
		return 255
	}
	if v <= 0.0031308 {
		v *= 12.92
	} else {
		v = 1.055*math.Pow(v, 1/2.4) - 0.055
	}
	return byte(math.Round(v * 255))
}

// Write writes the DNG described by s to w. Uncompressed raw data is
// generated and written one row at a time (Scene is evaluated per stored
// site), so memory use is O(Width) plus the IFDs, whatever the image size;
// compressed data is encoded in memory first, tiles in parallel (about
// the file's size). It returns the first validation or write error.
func Write(w io.Writer, s Spec) error {
	r, err := resolve(s)
	if err != nil {
		return err
	}
	if r.Compression == 7 {
		r.encodeTiles()
	}
	hdr, err := r.header()
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	if _, err := bw.Write(hdr); err != nil {
		return err
	}
	if r.Compression == 7 {
		for _, t := range r.tiles {
			if _, err := bw.Write(t); err != nil {
				return err
			}
		}
		return bw.Flush()
	}
	row := make([]byte, r.rowLen)
	for y := range r.Height {
		for x := range r.Width {
			if !r.Linear {
				le.PutUint16(row[2*x:], r.dn(x, y, CFAColor(x, y)))
				continue
			}
			for c := range 3 {
				le.PutUint16(row[2*(3*x+c):], r.dn(x, y, c))
			}
		}
		if _, err := bw.Write(row); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// dn is the stored value of colour c at site (x, y): BlackLevel +
// round(Scene·(White − Black)), clamped to the levels (NaN → BlackLevel).
func (r *resolved) dn(x, y, c int) uint16 {
	black := float64(r.BlackLevel)
	white := float64(r.WhiteLevel)
	dn := black + math.Round(r.Scene(x, y, c)*(white-black))
	if !(dn > black) { // also catches NaN
		dn = black
	} else if dn > white {
		dn = white
	}
	return uint16(dn)
}

// encodeTiles fills r.tiles with the raw image's lossless JPEG tiles
// (ljpegEncode, two components), as many at once as there are CPUs.
func (r *resolved) encodeTiles() {
	t := r.tile
	tw, th := (r.Width+t-1)/t, (r.Height+t-1)/t
	r.tiles = make([][]byte, tw*th)
	var wg sync.WaitGroup
	next := make(chan int)
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for i := range next {
				x0, y0 := (i%tw)*t, (i/tw)*t
				r.tiles[i] = ljpegEncodeWith(r.bits(), t/2, t, 2, max(r.Predictor, 1), r.TablePerComponent, func(jx, jy, c int) int {
					x, y := min(x0+2*jx+c, r.Width-2+c), min(y0+jy, r.Height-2+(y0+jy)&1)
					return int(r.dn(x, y, CFAColor(x, y)))
				})
			}
		})
	}
	for i := range r.tiles {
		next <- i
	}
	close(next)
	wg.Wait()
}

// WriteFile writes the DNG described by s to the file at path (created or
// truncated, mode 0644). On error the partial file is removed.
func WriteFile(path string, s Spec) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(path)
		}
	}()
	return Write(f, s)
}
