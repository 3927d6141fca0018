package pipeline

import (
	"context"
	"errors"
	"io/fs"
	"os"

	"github.com/rawbatch/rawbatch/pipeline/encode"
	"github.com/rawbatch/rawbatch/pipeline/header"
)

// What the batch runner (batch) asks of the per-file pipeline
// beyond converting: the pieces of a file's develop that the runner needs
// to plan, admit and clean up after a conversion, without knowing how
// it is done.

// ConvertOutputs converts the RAW file in into every output of outs from
// one decode, as ConvertVariants does, run as o says (the header already
// read, the stage cache, LibRaw's threads). Errors name the input path and
// wrap rawerr's kinds, or context errors when ctx ends.
func ConvertOutputs(ctx context.Context, in string, outs []OutputSpec, s Settings, o ConvertOptions) (Result, error) {
	return convertFile(ctx, in, outs, s, o)
}

// ReadHeaderWith is ReadHeader with LibRaw's open done by identify (nil:
// in this process), for the runner's header helper processes.
func ReadHeaderWith(path string, identify header.IdentifyFunc) (*header.Header, error) {
	return readHeader(path, identify)
}

// CheckOutputLimits fails a file before decoding when one of the outputs
// of s would be larger than its format can hold, or than MaxOutputSide:
// WebP stores at most encode.MaxWebPSide pixels a side (a panorama's
// full-size WebP). The size is the decoded size of fi (DecodedSize) fitted
// to each variant. The error names in and the limit.
func CheckOutputLimits(in string, fi FileInfo, s Settings) error {
	w, h := DecodedSize(fi, s)
	for _, v := range s.OutputVariants() {
		if err := outputSizeError(in, v, w, h, encode.MaxWebPSide); err != nil {
			return err
		}
	}
	return nil
}

// FileKind names what a file mode that is not a regular file is
// ("directory", "named pipe", ...), for messages.
func FileKind(m os.FileMode) string { return fileKind(m) }

// CreateTemp creates a temporary output file in dir from pattern (as
// os.CreateTemp), flock-held by this process until it is renamed or
// removed, so that CleanStaleTemps of another run keeps it.
func CreateTemp(dir, pattern string) (*os.File, error) { return createTemp(dir, pattern) }

// TempPattern is the os.CreateTemp pattern of the temporary file for the
// output at path: TempPrefix, its (possibly shortened) base name, ".*".
func TempPattern(path string) string { return tempPattern(path) }

// IsSymlink reports whether path is a symbolic link itself (Lstat).
func IsSymlink(path string) bool {
	fi, err := os.Lstat(path)
	return err == nil && fi.Mode()&fs.ModeSymlink != 0
}

// PathReason returns the reason of err for a message that names path
// already: the *fs.PathError's operation and path are dropped, and a
// dangling symbolic link is named as such.
func PathReason(path string, err error) error {
	if errors.Is(err, fs.ErrNotExist) && IsSymlink(path) {
		return errors.New("broken symbolic link")
	}
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Path == path {
		return pe.Err
	}
	return err
}

// pathError is PathReason, for the files of this package.
func pathError(path string, err error) error { return PathReason(path, err) }

// HashParts are the parts of the settings hash of v's options that were
// added after the first up-to-date records were written: none when they
// have their default values, so that the outputs those records describe
// stay up to date.
func (v Variant) HashParts() []string { return v.hashParts() }

// RemoveStaleTemp removes the temporary output file at path if its name is
// one CreateTemp makes, its content is empty or starts like the format of
// that name's extension, and no live process holds its flock (it was left
// by a killed run). It returns the file's size in bytes and whether it was
// removed; anything else is left alone.
func RemoveStaleTemp(path string) (int64, bool) { return removeIfStale(path) }

// LibRawVersion is the linked LibRaw's version string ("0.21.4-Release"),
// as the up-to-date records keep it: a record of another version makes
// its output out of date.
func LibRawVersion() string { return LibRawInfo().Version }
