package encode

import (
	"fmt"

	"github.com/rawbatch/rawbatch/pipeline/internal/jpegturbo"
)

// JPEGSubsamplingNames lists the chroma subsamplings of JPEG outputs, for
// messages and help.
const JPEGSubsamplingNames = "444|422|420"

// MaxJPEGRows is the number of rows JPEGRows asks for before it hands
// them to libjpeg (one MCU row at 4:2:0).
const MaxJPEGRows = jpegturbo.MaxRows

// JPEGSubsamplingFor is the default chroma subsampling at quality q:
// "444" (full-resolution colour) at 90 and above, as photographers expect
// of high-quality files, "420" below (half the chroma resolution both
// ways: smaller files where the quality is already traded for size).
func JPEGSubsamplingFor(q int) string {
	if q >= 90 {
		return "444"
	}
	return "420"
}

// CheckJPEGSubsampling returns an error unless s is 444, 422 or 420.
func CheckJPEGSubsampling(s string) error {
	switch s {
	case "444", "422", "420":
		return nil
	}
	return fmt.Errorf("JPEG subsampling %q: want 444, 422 or 420", s)
}

// jpegSampling returns the luma sampling factors of subsampling s (""
// for the default at quality q).
func jpegSampling(s string, q int) (h, v int, err error) {
	if s == "" {
		s = JPEGSubsamplingFor(q)
	}
	switch s {
	case "444":
		return 1, 1, nil
	case "422":
		return 2, 1, nil
	case "420":
		return 2, 2, nil
	}
	return 0, 0, CheckJPEGSubsampling(s)
}

// JPEGCoefficientBytes is libjpeg's whole-image coefficient buffer in
// bytes per image pixel for a width×height image at subsampling s (""
// for the default at quality q): 6 at 444, 4 at 422, 3 at 420 (2 bytes
// per DCT coefficient, one coefficient per sample of the luma and the two
// chroma planes), kept until the end for the optimised Huffman tables; 0
// for an image written with the standard tables (more than
// jpegturbo.OptimizeMaxPixels). An unknown s counts as 444, the largest.
func JPEGCoefficientBytes(width, height int, s string, q int) float64 {
	if !jpegturbo.Optimized(width, height) {
		return 0
	}
	h, v, err := jpegSampling(s, q)
	if err != nil {
		h, v = 1, 1
	}
	return 2 * (1 + 2/float64(h*v))
}

// JPEGWorkingBytes is the JPEG encoder's memory in bytes for a
// width×height image at subsampling s ("" for the default at quality q):
// libjpeg's whole-image coefficient buffer for its optimised Huffman
// tables (6, 4 or 3 bytes per pixel at 444, 422, 420; none above
// jpegturbo.OptimizeMaxPixels) and about 320 KiB
// fixed, plus JPEGRows' row buffer (48 bytes per pixel of width).
func JPEGWorkingBytes(width, height int, s string, q int) int64 {
	h, v, err := jpegSampling(s, q)
	if err != nil {
		h, v = 1, 1 // the largest
	}
	return jpegturbo.WorkingBytes(width, height, h, v) + int64(3*MaxJPEGRows*width)
}

// JPEGLibrary describes the libjpeg linked at run time: its version, the
// libjpeg API version compiled against and the shared object that
// provides it, e.g. "libjpeg-turbo version 2.1.5 (build 20230203), API 62
// (/lib/x86_64-linux-gnu/libjpeg.so.62)".
func JPEGLibrary() string {
	return fmt.Sprintf("%s, API %d (%s)", jpegturbo.Version(), jpegturbo.APIVersion(), jpegturbo.LibraryPath())
}
