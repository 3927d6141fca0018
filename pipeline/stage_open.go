package pipeline

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/rawbatch/rawbatch/internal/rawerr"
	"github.com/rawbatch/rawbatch/pipeline/header"
	"github.com/rawbatch/rawbatch/pipeline/internal/libraw"
)

// openStage opens the file with LibRaw (identify) and looks the decoded
// image up in the stage cache.
var openStage = Stage{Name: "open", Scope: PerFile, Kind: IO, Cost: openCost, run: stageOpen}

// conversionFixedBytes is the measured size-independent overhead of a
// conversion: the peak RSS growth of converting a 200×200 file minus its
// buffers (LibRaw's handle and tables, stacks, I/O buffers).
const conversionFixedBytes = 3 << 19 // 1.5 MiB

// openCost: the handle and the rest of the fixed overhead, alive to the
// end.
func openCost(memCtx) StepMemory { return StepMemory{Alloc: conversionFixedBytes} }

// stageOpen opens j.in with LibRaw (ConvertOutputs has read its header) and
// looks its decoded image up in the stage cache.
func stageOpen(ctx context.Context, j *job) error {
	h, err := libraw.New()
	if err != nil {
		return err
	}
	j.h = h
	stop := context.AfterFunc(ctx, h.Cancel)
	defer stop()
	if err := h.Open(j.in); err != nil {
		return unrecognised(j.in, err)
	}
	j.info = h.Info()
	j.applyEditOrientation()                      // edit.go
	if err := checkMatrices(j.info); err != nil { // nonfinite.go
		return err
	}
	if j.settings.BaselineExposure && j.info.DNGVersion != 0 && j.hdr != nil {
		if err := nonFinite("BaselineExposureOffset (tag 51109)", j.hdr.BaselineExposureOffset); err != nil {
			return err
		}
	}
	return j.lookupCache()
}

// unwrapPath drops a leading "path: " from err's text, since ConvertFile
// adds the path once itself; the error chain is kept.
func unwrapPath(path string, err error) error {
	if msg, ok := strings.CutPrefix(err.Error(), path+": "); ok {
		return &pathless{msg: msg, err: err}
	}
	return err
}

type pathless struct {
	msg string
	err error
}

func (p *pathless) Error() string { return p.msg }

func (p *pathless) Unwrap() error { return p.err }

// unrecognised rewords LibRaw's "unsupported" for a file that has no RAW
// signature at all (random bytes, a headerless RAW cut short): LibRaw cannot
// tell an unknown format from a damaged one, and suggesting a newer LibRaw
// would mislead.
func unrecognised(path string, err error) error {
	if errors.Is(err, rawerr.ErrUnsupported) && !header.HasRawSignature(path) {
		return fmt.Errorf("%w: LibRaw %s does not recognise it (an unknown format, or a damaged file)",
			rawerr.ErrNotRaw, libraw.ShortVersion())
	}
	return err
}
