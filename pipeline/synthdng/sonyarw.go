package synthdng

import (
	"bytes"
	"fmt"
	"image"
	"image/jpeg"
	"math"
	"os"
	"runtime"
	"sync"

	"github.com/rawbatch/rawbatch/pipeline/tifftag"
)

// ARWSpec describes a synthetic Sony lossless-compressed ARW (the
// "Lossless Compressed RAW" of recent Sony bodies) as LibRaw 0.21 reads it
// (sony_ljpeg_load_raw): one TIFF IFD with Make "SONY", Compression 7,
// PhotometricInterpretation 32803 (CFA, RGGB), and the Bayer mosaic cut into
// tiles, each a lossless JPEG (ITU T.81 process 14, SOF3, predictor 1) of
// TileWidth/2 × TileLength/2 samples with four components, one per site of
// a 2×2 Bayer block (top left, top right, bottom left, bottom right).
type ARWSpec struct {
	// Width and Height are the mosaic size in pixels; TileWidth and
	// TileLength the tile size (all even; tiles may overhang the right and
	// bottom edges).
	Width, Height, TileWidth, TileLength int
	// Bits is the sample precision, 12..16; BlackLevel and WhiteLevel
	// are in raw units (the levels LibRaw applies for the Model, which
	// the caller reads back with LibRaw).
	Bits                   int
	BlackLevel, WhiteLevel int
	// Model goes to IFD0 Model (272); Make is always "SONY".
	Model string
	// Scene gives the linear camera-RGB value (0..1 of WhiteLevel−BlackLevel)
	// of channel ch (0 R, 1 G, 2 B) at stored pixel (x, y); each site
	// takes the channel of its CFA colour (CFAColor). It is called from
	// several goroutines at once.
	Scene func(x, y, ch int) float64

	// Optional EXIF, in an Exif IFD (tag 34665 of IFD0) when any is set:
	// ISO → ISOSpeedRatings (34855), ExposureTime (s, 33434), FNumber
	// (33437) and FocalLength (mm, 37386), Lens → LensModel (42036).
	ISO                                int
	ExposureTime, FNumber, FocalLength float64
	Lens                               string
	// AsShotNeutral, when not zero, is the camera RGB of the scene's
	// neutral (max component 1), written as the white-balance levels
	// Sony's SR2 data holds and LibRaw reads in any IFD (tag 0x7313,
	// WB_RGGBLevels: R, G, G, B multipliers, 1024 for the channel of
	// neutral 1).
	AsShotNeutral [3]float64
	// Preview, when not nil, is an sRGB preview written as a baseline JPEG
	// (PreviewQuality) at JPEGInterchangeFormat (513, 514) of IFD0, which
	// then describes the preview, with the raw image in a SubIFD (330), as
	// Sony lays its ARWs out; without it IFD0 is the raw image.
	Preview image.Image
}

// WriteSonyLosslessARW writes spec to path. Errors: invalid sizes or
// precision, and those of writing the file.
func WriteSonyLosslessARW(path string, s ARWSpec) error {
	if err := s.check(); err != nil {
		return err
	}
	var preview []byte
	if s.Preview != nil {
		var buf bytes.Buffer
		if err := jpeg.Encode(&buf, s.Preview, &jpeg.Options{Quality: PreviewQuality}); err != nil {
			return fmt.Errorf("synthdng: preview: %w", err)
		}
		preview = buf.Bytes()
	}
	if err := os.WriteFile(path, arwFile(s, s.tiles(), preview), 0o644); err != nil {
		return fmt.Errorf("synthdng: %w", err)
	}
	return nil
}

// check refuses sizes that are not positive and even, and a precision or
// levels LibRaw's decoder does not take.
func (s ARWSpec) check() error {
	if s.Width <= 0 || s.Height <= 0 || s.TileWidth <= 0 || s.TileLength <= 0 ||
		s.Width%2 != 0 || s.Height%2 != 0 || s.TileWidth%2 != 0 || s.TileLength%2 != 0 {
		return fmt.Errorf("synthdng: ARW sizes must be positive and even: %d×%d, tiles %d×%d", s.Width, s.Height, s.TileWidth, s.TileLength)
	}
	if s.Bits < 12 || s.Bits > 16 || s.WhiteLevel <= s.BlackLevel || s.WhiteLevel >= 1<<s.Bits {
		return fmt.Errorf("synthdng: ARW precision %d bits with levels %d..%d", s.Bits, s.BlackLevel, s.WhiteLevel)
	}
	if s.ISO < 0 {
		return fmt.Errorf("synthdng: negative ISO %d", s.ISO)
	}
	for _, v := range s.AsShotNeutral {
		if s.AsShotNeutral != ([3]float64{}) && !(v >= 1.0/64 && v <= 1) {
			return fmt.Errorf("synthdng: ARW AsShotNeutral %v: want components in [1/64, 1]", s.AsShotNeutral)
		}
	}
	if s.ExposureTime != 0 {
		if _, _, err := exposureRational(s.ExposureTime); err != nil {
			return err
		}
	}
	for _, v := range []float64{s.FNumber, s.FocalLength} {
		if v != 0 {
			if _, err := fixedRational(v, 1000); err != nil {
				return err
			}
		}
	}
	return nil
}

// tiles encodes the mosaic's tiles in row-major tile order, each a lossless
// JPEG (ljpegTile), as many at once as there are CPUs; sites past the
// mosaic's edge hold the black level.
func (s ARWSpec) tiles() [][]byte {
	raw := func(x, y int) int {
		if x >= s.Width || y >= s.Height {
			return s.BlackLevel
		}
		v := s.Scene(x, y, CFAColor(x, y))
		r := float64(s.BlackLevel) + math.Max(0, math.Min(1, v))*float64(s.WhiteLevel-s.BlackLevel)
		return int(math.Round(r))
	}
	tw := (s.Width + s.TileWidth - 1) / s.TileWidth
	th := (s.Height + s.TileLength - 1) / s.TileLength
	tiles := make([][]byte, tw*th)
	var wg sync.WaitGroup
	next := make(chan int)
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for i := range next {
				tiles[i] = ljpegTile(s, (i%tw)*s.TileWidth, (i/tw)*s.TileLength, raw)
			}
		})
	}
	for i := range tiles {
		next <- i
	}
	close(next)
	wg.Wait()
	return tiles
}

// arwFile lays out the little-endian TIFF of s: the header, IFD0, the raw
// SubIFD when there is a preview, the Exif IFD, the preview's JPEG, then
// the tiles.
func arwFile(s ARWSpec, tiles [][]byte, preview []byte) []byte {
	build := func(rawAt, exifAt, jpegAt, tilesAt int) (ifd0, raw, exif *ifd) {
		raw = &ifd{}
		ifd0 = raw
		if preview != nil {
			ifd0 = &ifd{}
			b := s.Preview.Bounds()
			ifd0.longs(tifftag.NewSubFileType, 1)
			ifd0.longs(tifftag.ImageWidth, uint32(b.Dx()))
			ifd0.longs(tifftag.ImageLength, uint32(b.Dy()))
			ifd0.shorts(tifftag.Compression, 6) // old-style JPEG, as Sony writes
			ifd0.shorts(tifftag.Orientation, 1)
			ifd0.longs(jpegIFOffset, uint32(jpegAt))
			ifd0.longs(jpegIFLength, uint32(len(preview)))
			ifd0.longs(tifftag.SubIFDs, uint32(rawAt))
		}
		ifd0.ascii(tifftag.Make, "SONY")
		ifd0.ascii(tifftag.Model, s.Model)
		counts := make([]uint32, len(tiles))
		offs := make([]uint32, len(tiles))
		off := tilesAt
		for i, t := range tiles {
			counts[i], offs[i] = uint32(len(t)), uint32(off)
			off += len(t)
		}
		raw.longs(tifftag.NewSubFileType, 0)
		raw.longs(tifftag.ImageWidth, uint32(s.Width))
		raw.longs(tifftag.ImageLength, uint32(s.Height))
		raw.shorts(tifftag.Compression, 7)
		raw.shorts(tifftag.PhotometricInterpretation, 32803)
		raw.longs(tifftag.StripOffsets, offs[0]) // tile 0
		raw.shorts(tifftag.SamplesPerPixel, 1)
		raw.longs(tifftag.StripByteCounts, counts[0])
		raw.shorts(tifftag.TileWidth, uint16(s.TileWidth))
		raw.shorts(tifftag.TileLength, uint16(s.TileLength))
		raw.longs(tifftag.TileOffsets, offs...)
		raw.longs(tifftag.TileByteCounts, counts...)
		raw.shorts(tifftag.CFARepeatPatternDim, 2, 2)
		raw.bytes(tifftag.CFAPattern, 0, 1, 1, 2)
		if n := s.AsShotNeutral; n != ([3]float64{}) {
			m := func(c int) uint16 { return uint16(math.Round(1024 / n[c])) }
			raw.shorts(sonyWBRGGBLevels, m(0), m(1), m(1), m(2))
		}
		if s.ISO != 0 || s.ExposureTime != 0 || s.FNumber != 0 || s.FocalLength != 0 || s.Lens != "" {
			exif = &ifd{}
			if s.ISO != 0 {
				exif.shorts(tifftag.PhotographicSensitivity, uint16(min(s.ISO, math.MaxUint16)))
			}
			if s.ExposureTime != 0 {
				n, d, _ := exposureRational(s.ExposureTime) // checked
				exif.rationals(tifftag.ExposureTime, n, d)
			}
			if s.FNumber != 0 {
				n, _ := fixedRational(s.FNumber, 1000)
				exif.rationals(tifftag.FNumber, n, 1000)
			}
			if s.FocalLength != 0 {
				n, _ := fixedRational(s.FocalLength, 1000)
				exif.rationals(tifftag.FocalLength, n, 1000)
			}
			if s.Lens != "" {
				exif.ascii(tifftag.LensModel, s.Lens)
			}
			ifd0.longs(tifftag.ExifIFD, uint32(exifAt))
		}
		return ifd0, raw, exif
	}
	// Pass 1: sizes; pass 2: offsets.
	ifd0, raw, exif := build(0, 0, 0, 0)
	pos := 8 + ifd0.size()
	rawAt, exifAt := 0, 0
	if raw != ifd0 {
		rawAt = pos
		pos += raw.size()
	}
	if exif != nil {
		exifAt = pos
		pos += exif.size()
	}
	jpegAt := pos
	tilesAt := align4(pos + len(preview))
	ifd0, raw, exif = build(rawAt, exifAt, jpegAt, tilesAt)
	size := tilesAt
	for _, t := range tiles {
		size += len(t)
	}
	buf := make([]byte, tilesAt, size)
	copy(buf, []byte{'I', 'I', 42, 0, 8, 0, 0, 0})
	copy(buf[8:], ifd0.encode(8))
	if raw != ifd0 {
		copy(buf[rawAt:], raw.encode(rawAt))
	}
	if exif != nil {
		copy(buf[exifAt:], exif.encode(exifAt))
	}
	copy(buf[jpegAt:], preview)
	for _, t := range tiles {
		buf = append(buf, t...)
	}
	return buf
}

// ljpegTile encodes the tile at (tx, ty) as a lossless JPEG (ljpegEncode)
// of four components: sample (jx, jy) of component c is raw site
// (tx+2jx+c&1, ty+2jy+c>>1).
func ljpegTile(s ARWSpec, tx, ty int, raw func(x, y int) int) []byte {
	return ljpegEncode(s.Bits, s.TileWidth/2, s.TileLength/2, 4, func(jx, jy, c int) int {
		return raw(tx+2*jx+c&1, ty+2*jy+c>>1)
	})
}

// TIFF 6.0 §22 JPEGInterchangeFormat and JPEGInterchangeFormatLength: where
// IFD0's preview JPEG is and its length in bytes.
const (
	jpegIFOffset = 513
	jpegIFLength = 514
)

// sonyWBRGGBLevels is Sony's WB_RGGBLevels (0x7313) of the SR2 data.
const sonyWBRGGBLevels = 0x7313
