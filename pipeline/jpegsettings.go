package pipeline

import (
	"fmt"

	"github.com/rawbatch/rawbatch/pipeline/encode"
)

// JPEGSubsamplingNames lists the values of --jpeg-subsampling, for
// messages and help: auto is the default by quality.
const JPEGSubsamplingNames = "auto|" + encode.JPEGSubsamplingNames

// ParseJPEGSubsampling parses a --jpeg-subsampling value: "444", "422",
// "420", or "auto" (or "") for the default by quality, returned as "".
func ParseJPEGSubsampling(s string) (string, error) {
	if s == "" || s == "auto" {
		return "", nil
	}
	if err := encode.CheckJPEGSubsampling(s); err != nil {
		return "", fmt.Errorf("%q: want auto (444 at quality 90 and above, 420 below), 444, 422 or 420", s)
	}
	return s, nil
}

// validateJPEG reports a JPEGSubsampling that is not one of
// JPEGSubsamplingNames.
func (s Settings) validateJPEG() error {
	if _, err := ParseJPEGSubsampling(s.JPEGSubsampling); err != nil {
		return fmt.Errorf("jpeg subsampling %w", err)
	}
	return nil
}

// JPEGLibrary describes the libjpeg that writes JPEG outputs, as linked at
// run time (encode.JPEGLibrary: "libjpeg-turbo version 2.1.5 (build
// 20230203), API 62 (/lib/x86_64-linux-gnu/libjpeg.so.62)").
func JPEGLibrary() string { return encode.JPEGLibrary() }
