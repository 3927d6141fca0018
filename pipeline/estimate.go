package pipeline

import (
	"errors"
	"fmt"

	"github.com/rawbatch/rawbatch/budget"
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

// ReadHeader reads a file's header without decoding pixels: Sniff's checks
// (never opening a FIFO or device), then package header (its own TIFF, CR3,
// RAF, MRW, X3F, CRW and IIQ parsers, then LibRaw's identify). A RAW variant
// the linked LibRaw is known not to decode (lossy CR3 before LibRaw 0.21,
// Sony lossless ARW before 0.21) fails with rawerr.ErrUnsupported naming the
// LibRaw version. The Header is returned when anything was read, also with
// an error. Errors name the path and wrap rawerr's kinds.
func ReadHeader(path string) (*header.Header, error) {
	// Sniff first: it never opens a FIFO, and names empty, text and other
	// non-RAW files plainly. A structural problem it finds (data past the
	// end of the file) is reported after the header is read, so that
	// inspect still shows the header.
	_, serr := openAndSniff(path)
	if serr != nil && !errors.Is(serr, rawerr.ErrCorrupt) {
		return nil, fmt.Errorf("%s: %w", path, pathError(path, serr))
	}
	h, err := header.Read(path)
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
// converting a file described by fi with settings s, LibRaw using threads
// OpenMP threads. The formula is in docs/memory.md.
func EstimateMemory(fi FileInfo, s Settings, threads int) budget.Breakdown {
	in := budget.Input{
		RawWidth: fi.RawWidth, RawHeight: fi.RawHeight, CFA: fi.CFA,
		Width: fi.Width, Height: fi.Height, HalfSize: s.HalfSize,
		Demosaic: string(s.Demosaic), Threads: threads,
		OutputBytesPerPixel: 4,
	}
	if s.Format == PNG16 {
		// 16-bit NRGBA64, and image/png's and zlib's working memory
		// (measured: 2 bytes per pixel at BestSpeed, and about 1 MiB of
		// compressor state).
		in.OutputBytesPerPixel, in.EncoderBytesPerPixel, in.EncoderFixedBytes = 8, 2, 1<<20
	}
	return budget.Estimate(in)
}
