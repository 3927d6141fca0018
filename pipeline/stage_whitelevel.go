package pipeline

import (
	"context"
	"errors"
	"sync"

	"github.com/rawbatch/rawbatch/pipeline/highlight"
	"github.com/rawbatch/rawbatch/pipeline/internal/libraw"
)

// whiteLevelStage sets the white level of the unpacked CFA data, between
// LibRaw's unpack and its processing: with --white-level data, the clipping
// pile of each CFA channel's histogram (highlight.RescaleFromHistogram: WhiteLevels), every
// channel rescaled to clip at one level (highlight.Equalise, RescaleRaw)
// so that clipped areas come out neutral; with libraw, LibRaw's own level.
// Files without single-sample mosaic data (libraw.ErrNoCFA: linear DNG,
// sRAW, Foveon) keep LibRaw's. Nothing to do on a stage cache hit.
var whiteLevelStage = Stage{Name: "white-level", Scope: PerFile, Kind: Pointwise, Cost: whiteLevelCost, run: stageWhiteLevel}

// whiteLevelCost: the histogram of 4 × 65536 counters (1 MiB) of each of
// the file's threads (RawHistogramOn) and RescaleRaw's table of 4 × 65536
// values (512 KiB), the data changed in place.
func whiteLevelCost(m memCtx) StepMemory {
	if !m.fi.CFA {
		return StepMemory{}
	}
	return StepMemory{Scratch: int64(max(1, m.threads))<<20 + 1<<19}
}

// rawLevels are what the white-level stage found, for the white-balance
// stage's estimate from the raw data: the black level per CFA colour and
// the white level (DN) of the data as LibRaw will process it.
type rawLevels struct {
	ok    bool
	black [4]float64
	white float64
	// rescaled: the data-derived level was applied (RescaleRaw).
	rescaled bool
}

func stageWhiteLevel(_ context.Context, j *job) error {
	if j.cached != nil {
		return nil
	}
	// One pass over the data counts the histogram both the levels and
	// the pile search read.
	buf := rawHistograms.get()
	defer rawHistograms.put(buf) // for the next file's count
	lv, hist, err := j.h.LevelsAndHistogramInto(j.threadsNow(), buf)
	if errors.Is(err, libraw.ErrNoCFA) {
		return nil
	}
	if err != nil {
		return err
	}
	j.levels = rawLevels{ok: true, black: lv.Black, white: float64(lv.White)}
	if j.settings.whiteLevel() != WhiteLevelData {
		return nil
	}
	r := highlight.RescaleFromHistogram(hist, lv.White, lv.Black)
	if r.White <= 0 || r.White > 65535 {
		return nil
	}
	for k := range 4 {
		// RescaleRaw takes blacks ≥ 0; a negative one cannot be.
		r.Black[k] = max(r.Black[k], 0)
	}
	if err := j.h.RescaleRaw(j.threadsNow(), r.Black, r.Gain, r.Clip, r.White); err != nil {
		return err
	}
	j.levels.white, j.levels.rescaled = float64(r.White), true
	return nil
}

// rawHistograms keeps the white-level stage's histogram counters
// (libraw.HistogramCounters, 1 MiB) from file to file, zeroed: a process
// converting small files one after another (a worker) counts each into
// memory it already has, where fresh counters cost their clearing, a page
// fault per 4 KiB touched and, given back between files by the runtime,
// again for the next file.
var rawHistograms histogramKeep

// histogramKeep is a free list of at most keptHistograms zeroed histogram
// buffers.
type histogramKeep struct {
	mu   sync.Mutex
	free [][]uint32
}

// keptHistograms: the conversions running at once in one process that
// find theirs (a worker runs one; more allocate their own).
const keptHistograms = 2

// get returns a zeroed buffer of libraw.HistogramCounters counters.
func (k *histogramKeep) get() []uint32 {
	k.mu.Lock()
	defer k.mu.Unlock()
	if n := len(k.free); n > 0 {
		b := k.free[n-1]
		k.free = k.free[:n-1]
		return b
	}
	return make([]uint32, libraw.HistogramCounters)
}

// put zeroes b, whose histogram is read no more, and keeps it (or drops
// it when keptHistograms are kept).
func (k *histogramKeep) put(b []uint32) {
	clear(b)
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.free) < keptHistograms {
		k.free = append(k.free, b)
	}
}
