package pipeline

import (
	"errors"
	"fmt"

	"github.com/rawbatch/rawbatch/internal/rawerr"
	"github.com/rawbatch/rawbatch/pipeline/encode"
	"github.com/rawbatch/rawbatch/pipeline/header"
	"github.com/rawbatch/rawbatch/pipeline/internal/libraw"
)

// FileInfo is what rawbatch knows about an input before decoding it.
type FileInfo struct {
	Make, Model string
	// RawWidth, RawHeight: the full raw image in pixels; Width, Height: the
	// output image after crop and rotation, in pixels.
	RawWidth, RawHeight, Width, Height int
	// CFA is true for a mosaic sensor (one sample per raw pixel).
	CFA bool
	// Header is the full header read, nil when the file was not inspected.
	Header *header.Header
}

// ReadHeader reads a file's header without decoding pixels: header.Sniff's checks
// (never opening a FIFO or device), then package header (its own TIFF, CR3,
// RAF, MRW, X3F, CRW and IIQ parsers, then LibRaw's identify). A RAW variant
// the linked LibRaw is known not to decode (lossy CR3 before LibRaw 0.21,
// Sony lossless ARW before 0.21) fails with rawerr.ErrUnsupported naming the
// LibRaw version. The Header is returned when anything was read, also with
// an error. Errors name the path and wrap rawerr's kinds.
//
// LibRaw's part runs in this process: rawbatch's parent process uses
// HeaderReader.ReadHeader instead, which runs it in a helper process.
func ReadHeader(path string) (*header.Header, error) { return ReadHeaderWith(path, nil) }

// ReadHeaderWith is ReadHeader with LibRaw's open done by identify (nil: in
// process), for the runner's header helper processes.
func ReadHeaderWith(path string, identify header.IdentifyFunc) (*header.Header, error) {
	// Sniff first: it never opens a FIFO, and names empty, text and other
	// non-RAW files plainly. A structural problem it finds (data past the
	// end of the file) is reported after the header is read, so that
	// inspect still shows the header.
	_, serr := header.SniffFile(path)
	if serr != nil && !errors.Is(serr, rawerr.ErrCorrupt) {
		return nil, fmt.Errorf("%s: %w", path, PathReason(path, serr))
	}
	h, err := header.ReadWith(path, identify)
	if h != nil && h.Unsupported != "" {
		// Known undecodable variants are reported as such even when the
		// file is also damaged: "corrupt" would send users hunting for a
		// better copy of a file the installed LibRaw cannot read anyway.
		return h, fmt.Errorf("%s: %w: not supported by LibRaw %s: %s", path, rawerr.ErrUnsupported, libraw.ShortVersion(), h.Unsupported)
	}
	if err != nil && serr != nil && errors.Is(err, rawerr.ErrUnsupported) {
		// LibRaw cannot open a file our structure check found cut short:
		// it is truncated, not of an unsupported kind.
		return h, fmt.Errorf("%s: %w", path, serr)
	}
	if err != nil {
		// header's errors already name the path.
		if h != nil && h.LibRawErr != nil && errors.Is(err, rawerr.ErrUnsupported) {
			return h, fmt.Errorf("%s: %w", path, unrecognised(path, h.LibRawErr))
		}
		return h, err
	}
	if serr != nil {
		return h, fmt.Errorf("%s: %w", path, serr)
	}
	if h.LibRawErr != nil {
		return h, fmt.Errorf("%s: %w", path, unrecognised(path, h.LibRawErr))
	}
	return h, nil
}

// InfoFromHeader returns the FileInfo of a header read by ReadHeader.
func InfoFromHeader(h *header.Header) FileInfo {
	return FileInfo{Make: h.Make, Model: h.Model, RawWidth: h.RawWidth, RawHeight: h.RawHeight,
		Width: h.Width, Height: h.Height, CFA: h.CFA, Header: h}
}

// ReadInfo is ReadHeader reduced to what scheduling needs.
func ReadInfo(path string) (FileInfo, error) {
	h, err := ReadHeader(path)
	if err != nil {
		return FileInfo{}, err
	}
	return InfoFromHeader(h), nil
}

// Memory is the estimated peak memory of converting one file, from the
// declared costs of the steps of its plan (Stage.Cost).
type Memory struct {
	// Total is the peak in bytes over the plan's steps of what is alive.
	Total int64
	// Fixed is the size-independent overhead of a conversion in bytes
	// (LibRaw's handle and tables, stacks, I/O buffers), part of Total.
	Fixed int64
	// Steps are the plan's steps in order, with their costs.
	Steps []StepMemory
	// Whole is Total on the whole-image path: the same as Total unless
	// the file is expected to stream (streamPredicted), which it does
	// not when the stage cache keeps its decoded image or has it already.
	Whole int64
	// Streamed: Total is the estimate of a conversion streamed in row
	// bands (its plan marks steps Step.Stream and its header predicts it
	// streams: streamPredicted).
	Streamed bool
	// HalfSize: the file is estimated at half size (--half-size, or the
	// half-size tier takes it).
	HalfSize bool
}

// StepMemory is the memory one step of a plan needs, in bytes.
type StepMemory struct {
	// Step is the step's name (Step.Name).
	Step string
	// Scratch is held only while the step runs (LibRaw's buffers, an
	// encoder's state, a resize's intermediate images).
	Scratch int64
	// Alloc is the buffer the step makes that outlives it (an image).
	Alloc int64
	// Free is what the step lets go of when it ends (its input, or an
	// image it has quantised).
	Free int64
	// Peak is the total alive while the step runs: what earlier steps
	// left, plus Scratch and Alloc.
	Peak int64
}

// memCtx is what a stage's cost depends on: the file, the settings, the
// OpenMP threads LibRaw may use, and the step (its size, its variant).
type memCtx struct {
	fi      FileInfo
	s       Settings
	threads int
	step    Step
	v       Variant // the step's variant; zero for a shared step
	// resized: the step's variant has its own, resized image.
	resized bool
	// streamed: the step is part of a streamed conversion (Step.Stream,
	// and streamPredicted says the file will stream).
	streamed bool
}

// px is the step's image size in pixels.
func (m memCtx) px() int64 { return int64(m.step.W) * int64(m.step.H) }

// EstimateMemory returns the peak memory estimate in bytes of converting a
// file described by fi with settings s (all its variants), LibRaw using
// threads OpenMP threads: the steps of PlanStages(fi, s) in order, each
// adding what its stage declares (Stage.Cost) to what is alive. A shared
// step's Free takes effect when it ends (LibRaw's buffers are C memory,
// freed at once); a variant's own steps free nothing until the variant's
// last step has run (Go's collector reclaims them then: ConvertOutputs runs
// runtime.GC between variants). The formulas are in docs/memory.md.
//
// The file is estimated as ConvertOutputs decodes it: at half size when
// the half-size tier takes it (WithHalfSizeTier, for all its variants).
// Total counts on what the header predicts: that the file streams
// (streamPredicted) and that the embedded preview makes the source=auto
// variants it qualifies for (PlannedSources); Whole is the estimate
// without either, what the conversion needs when it finds once open that
// a prediction does not hold.
func EstimateMemory(fi FileInfo, s Settings, threads int) Memory {
	s, _ = WithHalfSizeTier(fi, s, s.OutputVariants())
	streamed := streamPredicted(fi, s)
	m := estimateMemory(fi, s, threads, streamed, true)
	m.Whole, m.HalfSize = m.Total, s.HalfSize
	if streamed || autoFromPreview(fi, s.OutputVariants(), s) {
		m.Whole = estimateMemory(fi, s, threads, false, false).Total
	}
	return m
}

// estimateMemory is EstimateMemory with the streamed steps' costs
// (Step.Stream) as streamed or not (Memory.Streamed: some were), and the
// source=auto variants planned from the preview where the header says it
// qualifies (guess: PlannedSources) or from the raw data.
func estimateMemory(fi FileInfo, s Settings, threads int, streamed, guess bool) Memory {
	vs := s.OutputVariants()
	if guess {
		vs = PlannedSources(fi, vs, s)
	}
	w, h := DecodedSize(fi, s)
	p := PlanVariants(w, h, vs, s)
	m := Memory{Fixed: conversionFixedBytes}
	var live, pending int64
	for n, st := range p.Steps {
		c := memCtx{fi: fi, s: s, threads: threads, step: st, streamed: streamed && st.Stream}
		m.Streamed = m.Streamed || c.streamed
		if st.v >= 0 {
			c.v = vs[st.v]
			c.resized = st.W != p.W || st.H != p.H
		}
		var sm StepMemory
		if !c.streamed || st.Pass > 0 || st.Stage == demosaicStage.Name || st.Stage == encodeStage.Name || st.Stage == denoiseStage.Name || st.Stage == resizeStage.Name {
			// A streamed file's band steps hold their rows in the
			// demosaic step's buffers (streamCost), but for the
			// denoise's second pass (denoiseCost's streamed form); the
			// other steps between demosaic and the pass are idle for it
			// (a downscaled variant's resize is its own: resizeCost).
			sm = st.stage.Cost(c)
		}
		sm.Step = st.Name
		sm.Peak = live + sm.Scratch + sm.Alloc
		m.Total = max(m.Total, sm.Peak)
		live += sm.Alloc
		if st.Shared() {
			live -= sm.Free
		} else {
			live += sm.Scratch
			pending += sm.Free + sm.Scratch
			if n+1 == len(p.Steps) || p.Steps[n+1].v != st.v {
				live -= pending
				pending = 0
			}
		}
		m.Steps = append(m.Steps, sm)
	}
	return m
}

// encoderCost returns a format's quantised bytes per pixel and its
// encoder's working memory per pixel and fixed for a w×h image: JPEG
// (libjpeg-turbo: its optimised tables' coefficients, 6, 4 or 3 bytes at
// 444, 422, 420, none above jpegturbo.OptimizeMaxPixels), 16-bit PNG (image/png and zlib at BestSpeed, measured 2 bytes per
// pixel and about 1 MiB), 16-bit TIFF (streamed: no quantised image, one
// strip and the write buffer), WebP (libwebp: the
// RGBA copy and about 4 bytes per pixel of its own, plus 2 MiB when the
// system's libwebp is used, 24 MiB for the WebAssembly runtime otherwise),
// 8-bit TIFF (the RGBA image), AVIF and JPEG XL (the RGBA or 16-bit RGBA
// image; their encoders' memory depends on the size otherwise than
// linearly: wholeFrameBytes), Ultra HDR (the base's RGBA image; its
// encoders' in wholeFrameBytes). A compressed TIFF holds its compressed
// strips until the IFD is written (the output is not seekable): counted
// as 1.5 times the uncompressed samples, LZW's worst case on noise.
func encoderCost(v Variant, w, h int) (quant int, perPixel float64, fixed int64) {
	var held float64
	if v.Compress != "" && v.Compress != "none" {
		held = 1.5 * 3
	}
	switch v.Format {
	case "png16":
		return 8, 2, 1 << 20
	case "tiff16":
		return 0, 2 * held, 1 << 20 // quantised row by row as the strips are written
	case "tiff8":
		return 4, held, 1 << 20
	case "webp":
		if encode.WebPNative() {
			return 4, 8, 2 << 20
		}
		return 4, 8, 24 << 20
	case "png8":
		return 4, 1, 1 << 20
	case "jpeg": // libjpeg-turbo: coefficients for optimised Huffman tables, tables, row and output buffers
		return 4, encode.JPEGCoefficientBytes(w, h, v.Normal().Subsampling, v.Normal().Quality), 1 << 20
	case "uhdr": // the base's RGBA image; the encoders': wholeFrameBytes
		return 4, 0, 1 << 20
	case "avif", "jxl": // whole-frame encoders: wholeFrameBytes, by the image's size
		if v.quant16() {
			return 8, 0, 0
		}
		return 4, 0, 0
	}
	return 4, 0, 0
}

// wholeFrameBytes is the working memory in bytes of an AVIF, JPEG XL or
// Ultra HDR variant's encoder for a w×h image (encode.AVIFWorkingBytes,
// encode.JXLWorkingBytes: libavif's and the AV1 encoder's frames, libjxl's
// planes, and the packed samples they are given; encode.UHDRWorkingBytes:
// the base's JPEG coefficients, the encoded file held, the gain map's), 0
// for other formats.
func wholeFrameBytes(v Variant, w, h int) int64 {
	v = v.Normal()
	switch v.Format {
	case "avif":
		return encode.AVIFWorkingBytes(w, h, v.AVIFOptions())
	case "jxl":
		return encode.JXLWorkingBytes(w, h, v.JXLOptions())
	case "uhdr":
		s := v.GainMapScale
		return encode.UHDRWorkingBytes(w, h, (w+s-1)/s, (h+s-1)/s, v.Subsampling, v.Quality)
	}
	return 0
}

// encoderBytes is the working memory in bytes of v's encoder for a w×h
// image (the encode step's Scratch without the streamed-rows accounting):
// encoderCost's per-pixel and fixed bytes and a whole-frame format's
// wholeFrameBytes.
func encoderBytes(v Variant, w, h int) int64 {
	_, e, fixed := encoderCost(v, w, h)
	return int64(e*float64(w)*float64(h)) + fixed + wholeFrameBytes(v, w, h)
}
