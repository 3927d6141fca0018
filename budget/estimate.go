// Package budget sizes conversions in bytes and runs as many at once as fit
// in a memory budget. It imports nothing else of rawbatch.
//
// The estimate is built from the buffers a conversion really allocates
// (docs/memory.md); BenchmarkEstimateCalibration in package pipeline
// measures it against the peak RSS of real conversions.
package budget

// Input describes one conversion for Estimate. Sizes are in pixels.
type Input struct {
	// RawWidth, RawHeight: the full raw image LibRaw unpacks
	// (sizes.raw_width × raw_height).
	RawWidth, RawHeight int
	// CFA is true for a mosaic (Bayer, X-Trans) sensor: LibRaw keeps one
	// 16-bit sample per raw pixel (rawdata.raw_image). Otherwise (linear
	// DNG, Foveon, ...) it keeps four (rawdata.color4_image).
	CFA bool
	// Width, Height: the image LibRaw processes, before rotation (its
	// visible area, sizes.width × height, already halved by the caller for
	// a CFA sensor's half-size decode: pipeline's libRawSize holds that
	// rule; its area is the output's).
	Width, Height int
	// HalfSize: LibRaw's half-size decode; for a CFA sensor there is then
	// no demosaic. LibRaw ignores it for other sensors (it only shrinks
	// mosaic data), so rawbatch halves those after the copy and they cost
	// as much as a full decode.
	HalfSize bool
	// Demosaic is the algorithm name (linear, vng, ppg, ahd, dcb, dht,
	// aahd).
	Demosaic string
	// Threads is the number of OpenMP threads LibRaw may use (≥ 1).
	Threads int
	// OutputBytesPerPixel is the quantised output image: 4 for 8-bit RGBA,
	// 8 for 16-bit RGBA.
	OutputBytesPerPixel int
	// EncoderBytesPerPixel is the encoder's working memory per output
	// pixel, and EncoderFixedBytes its size-independent part (for example
	// compress/flate's compressor state).
	EncoderBytesPerPixel float64
	EncoderFixedBytes    int64
}

// Breakdown is an estimate in bytes, by buffer, and its total: the peak of
// the three phases of a conversion.
type Breakdown struct {
	// LibRaw's buffers: Raw (the unpacked raw data), Image (its 4×16-bit
	// processed image, 8 bytes per pixel), Scratch (the demosaic's working
	// buffers).
	Raw, Image, Scratch int64
	// rawbatch's: Float (the W×H×3 float32 working image, 12 bytes per
	// pixel), Output (the quantised image) and Encoder.
	Float, Output, Encoder int64
	// Fixed is the per-conversion overhead independent of size (LibRaw's
	// handle and tables, stacks, I/O buffers).
	Fixed int64
	// Total = Fixed + max(Raw+Image+Scratch, Raw+Image+Float,
	// Float+Output+Encoder): demosaic, copy into Go memory, encode.
	Total int64
}

// fixedBytes is the measured size-independent overhead of a conversion:
// the peak RSS growth of converting a 200×200 file minus its buffers.
const fixedBytes = 3 << 19 // 1.5 MiB

// ahdTile is dcraw/LibRaw's AHD tile size TS; each thread's tile buffer is
// 26·TS² bytes (malloc(26*TS*TS) in ahd_interpolate), of which only the
// part a tile touches becomes resident.
const ahdTile = 512

// scratchPerPixel is the demosaic's full-image working memory in bytes per
// processed pixel, beyond LibRaw's image: DCB keeps two float[3] copies
// (dcb_demosaic: image2, image3), DHT a float[3] copy and a direction map,
// AAHD two ushort[3] and two float[3] planes and a direction map. Measured
// with BenchmarkEstimateCalibration on a 12 MP synthetic DNG: dcb 24.0,
// dht 13.2, aahd 39.3.
var scratchPerPixel = map[string]float64{"dcb": 24, "dht": 13.2, "aahd": 39.3}

// Estimate returns the peak bytes of one conversion described by in.
func Estimate(in Input) Breakdown {
	px := int64(in.Width) * int64(in.Height)
	rawSamples := int64(1)
	if !in.CFA {
		rawSamples = 4
	}
	threads := int64(max(1, in.Threads))
	b := Breakdown{
		Raw:     int64(in.RawWidth) * int64(in.RawHeight) * 2 * rawSamples,
		Image:   px * 8,
		Float:   px * 12,
		Output:  px * int64(in.OutputBytesPerPixel),
		Encoder: int64(float64(px)*in.EncoderBytesPerPixel) + in.EncoderFixedBytes,
		Fixed:   fixedBytes,
	}
	if in.CFA && !in.HalfSize {
		switch in.Demosaic {
		case "ahd", "":
			b.Scratch = 26 * min(px, ahdTile*ahdTile) * threads
		default:
			b.Scratch = int64(float64(px) * scratchPerPixel[in.Demosaic])
		}
	}
	b.Total = b.Fixed + max(b.Raw+b.Image+b.Scratch, b.Raw+b.Image+b.Float, b.Float+b.Output+b.Encoder)
	return b
}
