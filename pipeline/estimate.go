package pipeline

import (
	"errors"
	"fmt"

	"github.com/rawbatch/rawbatch/budget"
	"github.com/rawbatch/rawbatch/pipeline/encode"
	"github.com/rawbatch/rawbatch/pipeline/header"
	"github.com/rawbatch/rawbatch/pipeline/internal/libraw"
	"github.com/rawbatch/rawbatch/pipeline/rawerr"
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
func ReadHeader(path string) (*header.Header, error) { return readHeader(path, nil) }

// readHeader is ReadHeader with LibRaw's open done by identify (nil: in
// process).
func readHeader(path string, identify header.IdentifyFunc) (*header.Header, error) {
	// Sniff first: it never opens a FIFO, and names empty, text and other
	// non-RAW files plainly. A structural problem it finds (data past the
	// end of the file) is reported after the header is read, so that
	// inspect still shows the header.
	_, serr := header.SniffFile(path)
	if serr != nil && !errors.Is(serr, rawerr.ErrCorrupt) {
		return nil, fmt.Errorf("%s: %w", path, pathError(path, serr))
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

// EstimateMemory returns the peak memory estimate in bytes, by buffer, of
// converting a file described by fi with settings s (all its variants),
// LibRaw using threads OpenMP threads. The formula is in docs/memory.md:
// budget.Estimate for the decode and the last variant, which converts the
// shared working image in place; each other variant, done one after the
// other, adds its own full-size copy, its resized image, its quantised
// image and its encoder beside the shared image.
func EstimateMemory(fi FileInfo, s Settings, threads int) budget.Breakdown {
	vs := s.OutputVariants()
	last := vs[len(vs)-1]
	lw, lh := libRawSize(fi, s)
	in := budget.Input{
		RawWidth: fi.RawWidth, RawHeight: fi.RawHeight, CFA: fi.CFA,
		Width: lw, Height: lh, HalfSize: s.HalfSize,
		Demosaic: string(s.Demosaic), Threads: threads,
	}
	in.OutputBytesPerPixel, in.EncoderBytesPerPixel, in.EncoderFixedBytes = encoderCost(last)
	b := budget.Estimate(in)
	dw, dh := DecodedSize(fi, s)
	w, h := int64(dw), int64(dh)
	px := w * h
	var extra int64
	others := vs[:len(vs)-1]
	if lw, lh := last.Fit(int(w), int(h)); int64(lw)*int64(lh) > px {
		others = vs // an upscaled last variant needs its larger image too
	}
	for _, v := range others {
		vw, vh := v.Fit(int(w), int(h))
		vpx := int64(vw) * int64(vh)
		q, e, ef := encoderCost(v)
		x := 12*px + int64(q)*vpx + int64(e*float64(vpx)) + ef
		if vpx != px {
			x += 12 * vpx // the resized image
		}
		extra = max(extra, x)
	}
	if extra > 0 {
		b.Total = max(b.Total, b.Fixed+12*px+extra)
	}
	return b
}

// encoderCost returns a format's quantised bytes per pixel and its
// encoder's working memory per pixel and fixed: JPEG (image/jpeg works by
// blocks), 16-bit PNG (image/png and zlib at BestSpeed, measured 2 bytes per
// pixel and about 1 MiB), 16-bit TIFF (streamed: no quantised image, one
// strip and the write buffer), WebP (libwebp: the
// RGBA copy and about 4 bytes per pixel of its own, plus 2 MiB when the
// system's libwebp is used, 24 MiB for the WebAssembly runtime otherwise),
// 8-bit TIFF (the RGBA image). A compressed TIFF holds its compressed
// strips until the IFD is written (the output is not seekable): counted
// as 1.5 times the uncompressed samples, LZW's worst case on noise.
func encoderCost(v Variant) (quant int, perPixel float64, fixed int64) {
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
	}
	return 4, 0, 0
}
