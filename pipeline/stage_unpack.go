package pipeline

import (
	"context"

	"github.com/rawbatch/rawbatch/pipeline/internal/libraw"
)

// unpackStage is LibRaw's unpack: it reads the raw data (rawdata) that the
// white-level and white-balance stages look at and demosaic processes.
// Nothing to do when the stage cache has the decoded image.
var unpackStage = Stage{Name: "unpack", Scope: PerFile, Kind: IO, Cost: unpackCost, run: stageUnpack}

// unpackCost: the unpacked raw data, raw_width×raw_height×2 bytes (×4
// samples for a non-CFA sensor: rawdata.color4_image), alive until the
// demosaic stage closes the handle (demosaicCost frees it); while it runs,
// the compressed tiles read at once (libraw.TileBatchBytes, at most the
// raw data's size: lossless JPEG is smaller than its samples).
func unpackCost(m memCtx) StepMemory {
	raw := rawDataBytes(m.fi)
	return StepMemory{Alloc: raw, Scratch: min(raw, libraw.TileBatchBytes())}
}

// rawDataBytes is the size in bytes of LibRaw's unpacked raw data of fi.
func rawDataBytes(fi FileInfo) int64 {
	samples := int64(1)
	if !fi.CFA {
		samples = 4
	}
	return int64(fi.RawWidth) * int64(fi.RawHeight) * 2 * samples
}

func stageUnpack(ctx context.Context, j *job) error {
	if j.cached != nil {
		return nil
	}
	stop := context.AfterFunc(ctx, j.h.Cancel)
	defer stop()
	// LibRaw's parallel decoders (CR3, compressed RAF; lossless JPEG
	// tiles, fastraw.cpp) use the file's thread share now, not every
	// CPU: a file admitted on one thread while another ended meanwhile
	// decodes on the cores that freed.
	if err := j.h.SetThreads(j.threadsNow()); err != nil {
		return err
	}
	if err := j.h.Unpack(); err != nil {
		return err
	}
	return nil
}
