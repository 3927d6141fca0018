package pipeline

import (
	"fmt"
	"strings"

	"github.com/rawbatch/rawbatch/pipeline/encode"
)

// JPEGSubsamplingNames lists the values of --jpeg-subsampling, for
// messages and help: auto is the default by quality.
const JPEGSubsamplingNames = "auto|" + encode.JPEGSubsamplingNames

// ParseJPEGSubsampling parses a --jpeg-subsampling (or a variant's
// subsampling=) value, in any case: "444", "422", "420", or "auto" for the
// default by quality, returned as "". An empty value is refused, as
// --demosaic "" is: auto is spelled out.
func ParseJPEGSubsampling(s string) (string, error) {
	v := strings.ToLower(strings.TrimSpace(s))
	if v == "auto" {
		return "", nil
	}
	if v == "" || encode.CheckJPEGSubsampling(v) != nil {
		return "", fmt.Errorf("%q: want auto (444 at quality 90 and above, 420 below), 444, 422 or 420", s)
	}
	return v, nil
}

// validateJPEG reports a JPEGSubsampling that is not one of
// JPEGSubsamplingNames ("" is auto).
func (s Settings) validateJPEG() error {
	if s.JPEGSubsampling == "" {
		return nil
	}
	if _, err := ParseJPEGSubsampling(s.JPEGSubsampling); err != nil {
		return fmt.Errorf("jpeg subsampling %w", err)
	}
	return nil
}

// JPEGLibrary describes the libjpeg that writes JPEG outputs, as linked at
// run time (encode.JPEGLibrary: "libjpeg-turbo version 2.1.5 (build
// 20230203), API 62 (/lib/x86_64-linux-gnu/libjpeg.so.62)").
func JPEGLibrary() string { return encode.JPEGLibrary() }
