package pipeline

import (
	"sync/atomic"

	"github.com/rawbatch/rawbatch/pipeline/header"
)

// ConvertOptions say how one conversion runs, where Settings say what it
// makes: none of them changes the pictures, so none is part of the
// settings hash of the up-to-date records or of the stage cache key. The
// zero value reads the header, uses no stage cache and leaves LibRaw's
// threads at OpenMP's default.
type ConvertOptions struct {
	// Header is the file's header when the caller has read it already
	// (nil: the conversion reads it).
	Header *header.Header
	// Cache is the stage cache of decoded images (nil: none).
	Cache *CacheOptions
	// Threads caps the OpenMP threads of LibRaw's processing (demosaic and
	// the rest of dcraw_process) for this conversion; 0 leaves OpenMP's
	// default (one per CPU). The runner gives each conversion its share
	// of the CPUs as it admits it (batch.Runner.Threads).
	Threads int
	// LiveThreads, when not nil, is the conversion's thread count now,
	// which may grow while it runs (never below Threads; the runner gives
	// a running conversion the cores others have freed: batch.Job.
	// MoreThreads): the unpack (LibRaw's parallel decoders), the white
	// level's histogram, the CFA's normalisation and the exposure anchor
	// read it as they start, the streamed demosaic's bands as they go;
	// the steps on GOMAXPROCS (par.Rows) follow the worker's, which it
	// raises with the count. LibRaw's processing stays at Threads. nil:
	// Threads throughout.
	LiveThreads func() int
	// Admitted and Whole are the bytes the conversion was admitted with
	// (its estimate, pipeline.Memory.Total) and its whole-image estimate
	// (Memory.Whole). When Whole is above Admitted (> 0) and a conversion
	// planned to stream (Step.Stream) finds at its demosaic that it cannot
	// (a fallback to LibRaw's demosaic, a stage cache hit), or a
	// source=auto variant the header said the preview makes finds once
	// the file is open that it needs the raw data (PlannedSources), it
	// stops with rawerr.ErrNeedsWhole before making the whole image or
	// decoding the raw data, so that its caller can admit it again at
	// Whole. 0: no check.
	Admitted, Whole int64
	// unfused runs the steps of fused passes one after the other, each
	// over the whole image (the tests' reference for the fused pass).
	unfused bool
	// wholeImage runs a conversion that would stream (stream.go) on the
	// whole image instead (the tests' reference for the streamed path).
	wholeImage bool
}

// liveThreads is a conversion's thread count that may grow while it runs
// (ConvertOptions.LiveThreads), and the largest count its steps read
// (Result.ThreadsMax).
type liveThreads struct {
	f   func() int
	max atomic.Int64
}

// threadsNow returns j's thread count now: ConvertOptions.LiveThreads
// when given (never below Threads), else Threads; it records the largest
// count read. Safe for concurrent use.
func (j *job) threadsNow() int {
	n := j.threads
	if j.live.f != nil {
		n = max(n, j.live.f())
	}
	for {
		m := j.live.max.Load()
		if int64(n) <= m || j.live.max.CompareAndSwap(m, int64(n)) {
			return n
		}
	}
}

// peak returns the largest thread count read (threadsNow), at least
// threads.
func (l *liveThreads) peak(threads int) int {
	return max(threads, int(l.max.Load()))
}
