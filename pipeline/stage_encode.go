package pipeline

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/rawbatch/rawbatch/internal/fileperm"
	"github.com/rawbatch/rawbatch/internal/rawerr"
	"github.com/rawbatch/rawbatch/pipeline/encode"
	"golang.org/x/sys/unix"
)

// encodeStage writes the variant's file (to a temporary name).
var encodeStage = Stage{Name: "encode", Scope: PerVariant, Kind: IO, Version: 1, Cost: encodeCost, run: stageEncode}

// encodeCost: the encoder's working memory (encoderCost; a whole-frame
// format's wholeFrameBytes), and it lets go of the quantised image, or for a streamed format (streamedRows) of the
// float image when floatFreed says so.
func encodeCost(m memCtx) StepMemory {
	q, e, ef := encoderCost(m.v, m.step.W, m.step.H)
	if streamedRows(m) {
		q = 0
	}
	sm := StepMemory{Scratch: int64(e*float64(m.px())) + ef + wholeFrameBytes(m.v, m.step.W, m.step.H), Free: int64(q) * m.px()}
	if m.streamed && len(m.s.OutputVariants()) > 1 {
		// Several variants streamed (stream_variants.go): the stored
		// rows stay until the last variant ends; a downscaled variant
		// lets go of its own images as on the whole-image path.
		if !m.resized {
			return sm
		}
	} else if m.streamed {
		// No float image: the stream's buffers and the raw data go.
		sm.Free = streamBufferBytes(m) + rawDataBytes(m.fi)
		return sm
	}
	if streamedRows(m) && floatFreed(m) {
		sm.Free += 12 * m.px()
	}
	return sm
}

// stageEncode writes the variant in its format, with its space's ICC
// profile and the EXIF metadata, to a temporary file in the output's
// directory (renamed into place when every variant of the file succeeded).
func stageEncode(_ context.Context, j *job) (err error) {
	v := j.cur
	out := v.spec.Path
	defer func() {
		// Name the output, not its temporary file, and keep the cause
		// (ENOSPC stays transient for the retries).
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = fmt.Errorf("writing %s: %w", out, pe.Err)
		}
	}()
	// The temporary name has no image extension, so photo importers
	// watching the folder do not pick it up.
	if v.dir == nil {
		if v.dir, err = openOutputDir(v.spec); err != nil {
			return err
		}
	}
	f, err := CreateTempIn(v.dir, out)
	if err != nil {
		return err
	}
	v.tmp = f.Name()
	// The variant's size: the encoders' C memory (libjpeg's coefficients,
	// libavif's and libjxl's planes) scales with it, so the garbage is
	// given back before them only for a large output (giveBack), not for
	// a thumbnail of a large file, whose worker would otherwise fault its
	// heap in again for every file.
	vw, vh := v.outputSize()
	vpx := int64(vw) * int64(vh)
	bw := bufio.NewWriterSize(&writebackWriter{f: f}, encodeBufferBytes(vpx))
	md := j.metadata()
	icc := v.space.ICC
	quality := v.spec.Variant.Quality
	if quality == 0 {
		quality = 90
	}
	switch v.spec.Variant.Format {
	case "png16":
		err = encode.PNG16(bw, v.quant, icc, md)
	case "png8":
		err = encode.PNG8(bw, v.quant, icc, md)
	case "tiff16":
		err = encode.TIFF16RowsOptions(bw, v.rows, icc, md, v.spec.Variant.TIFFOptions())
		v.rows = encode.RowsRGB16{}
		v.dropFloat()
	case "tiff8":
		err = encode.TIFF8(bw, v.quant, icc, md, v.spec.Variant.TIFFOptions())
	case "webp":
		err = encode.WebP(bw, v.quant, quality, false, icc, md)
	case "avif":
		o := v.spec.Variant.AVIFOptions()
		if o.HDR.Transfer != "" {
			o.HDR.MaxCLL, o.HDR.MaxFALL = v.maxCLL, v.maxFALL
		}
		giveBack(vpx) // C memory, as for JPEG's coefficients
		err = encode.AVIF(bw, v.quant, o, icc, md)
	case "jxl":
		o := v.spec.Variant.JXLOptions()
		if o.HDR.Transfer != "" {
			o.HDR.MaxCLL, o.HDR.MaxFALL = v.maxCLL, v.maxFALL
		}
		giveBack(vpx)
		err = encode.JXL(bw, v.quant, o, icc, md)
	case "uhdr":
		o := v.spec.Variant.UHDROptions()
		o.GainMap = v.gainMeta
		giveBack(vpx)
		err = encode.UltraHDR(bw, v.quant, v.gainMap, o, icc, md)
		v.gainMap = nil
	case "jpeg":
		o := encode.JPEGOptions{Quality: quality, Subsampling: v.spec.Variant.Subsampling}
		// libjpeg's coefficient buffer (encode.JPEGCoefficientBytes, for
		// images with optimised tables) is C memory, which cannot reuse
		// the pages of Go's garbage: give them back first, as before
		// LibRaw's allocations, so the peak follows the estimate
		// (TestEstimateCalibration, canon_eos_6d.dng).
		if encode.JPEGCoefficientBytes(vw, vh, o.Subsampling, quality) > 0 {
			giveBack(vpx)
		}
		if v.rows8.Bands.Fill != nil {
			err = encode.JPEGRows(bw, v.rows8, o, icc, md)
			v.rows8 = encode.RowsRGB8{}
			v.dropFloat()
		} else {
			err = encode.JPEGRows(bw, encode.ImageRows8(v.quant), o, icc, md)
		}
	default:
		err = fmt.Errorf("unknown output format %q", v.spec.Variant.Format)
	}
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = f.Chmod(fileperm.File())
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	v.quant = nil
	return err
}

// outputSize is the size in pixels of the image v's encoder writes: its
// streamed quantiser's (16- or 8-bit rows) or its quantised image's.
func (v *variantJob) outputSize() (w, h int) {
	switch {
	case v.rows8.Bands.Fill != nil:
		return v.rows8.W, v.rows8.H
	case v.rows.Bands.Fill != nil || v.rows.Row != nil:
		return v.rows.W, v.rows.H
	case v.quant != nil:
		return v.quant.Bounds().Dx(), v.quant.Bounds().Dy()
	}
	return 0, 0
}

// writebackChunk is how many bytes writebackWriter lets accumulate before it
// asks the kernel to start writing them out.
const writebackChunk = 8 << 20

// encodeBufferBytes is the size in bytes of the buffer an output of an
// image of px pixels is written through: 1 MiB (few, large writes), less
// for a small image, whose whole output (at most 6 bytes a pixel, 16-bit
// RGB, and its metadata) needs no more than one fresh megabyte per file.
func encodeBufferBytes(px int64) int {
	return int(min(1<<20, max(64<<10, 6*px)))
}

// writebackWriter writes to f and, after every writebackChunk bytes, starts
// the kernel's writeback of them (sync_file_range(2) with
// SYNC_FILE_RANGE_WRITE: asynchronous, it does not wait for the disk). The
// fsync before the output is renamed into place then waits only for the
// tail instead of the whole file: for a 144 MB TIFF the disk works while the
// rest of the file is computed. It changes nothing about durability, which
// still rests on that fsync; where sync_file_range is not supported (some
// filesystems), it is silently skipped.
type writebackWriter struct {
	f         *os.File
	off, done int64 // bytes written, and bytes whose writeback was started
	skip      bool  // sync_file_range failed once: stop trying
}

func (w *writebackWriter) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	w.off += int64(n)
	if !w.skip && w.off-w.done >= writebackChunk {
		if unix.SyncFileRange(int(w.f.Fd()), w.done, w.off-w.done, unix.SYNC_FILE_RANGE_WRITE) != nil {
			w.skip = true
		}
		w.done = w.off
	}
	return n, err
}

// openOutputDir opens the folder of the output spec (fileperm.OpenBelow:
// walked to from spec.Root without following a symbolic link, when
// Root is set), which the output's temporary file is made in and renamed
// from. A link or a file in the way is refused (rawerr.ErrRefused).
func openOutputDir(spec OutputSpec) (*os.File, error) {
	d, err := fileperm.OpenBelow(spec.Root, filepath.Dir(spec.Path), false)
	var le *fileperm.LinkError
	if errors.As(err, &le) {
		return nil, rawerr.WithKind(err, rawerr.ErrRefused)
	}
	return d, err
}
