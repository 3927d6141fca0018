package pipeline

import (
	"fmt"
	"os"

	"github.com/rawbatch/rawbatch/budget"
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
}

// ReadInfo reads a file's header without decoding pixels: a Sniff check,
// then LibRaw's identify (open without unpack) for its sizes. Errors name
// the path and wrap rawerr's kinds.
func ReadInfo(path string) (FileInfo, error) {
	if _, err := openAndSniff(path); err != nil {
		return FileInfo{}, fmt.Errorf("%s: %w", path, err)
	}
	in, w, h, err := libraw.Identify(path)
	if err != nil {
		return FileInfo{}, fmt.Errorf("%s: %w", path, unrecognised(path, err))
	}
	if err := plausible(path, in); err != nil {
		return FileInfo{}, fmt.Errorf("%s: %w", path, err)
	}
	return FileInfo{Make: in.Make, Model: in.Model, RawWidth: in.RawWidth, RawHeight: in.RawHeight,
		Width: w, Height: h, CFA: in.Filters != 0}, nil
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

// fileSize returns the size of path in bytes, 0 when it cannot be read.
func fileSize(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}
