package pipeline

import (
	"sync/atomic"
	"testing"
)

// TestStreamLiveThreads: a streamed conversion whose thread count grows
// while it runs (ConvertOptions.LiveThreads raised after its first
// demosaic band) reads the new count at the next bands (Result.ThreadsMax)
// and writes the same pixels as on a fixed single thread.
func TestStreamLiveThreads(t *testing.T) {
	dir := t.TempDir()
	in := writeClipped(t, dir, 300, 600, 1, false)
	defer func(b int) { streamBand = b }(streamBand)
	streamBand = 64
	var live atomic.Int64
	live.Store(1)
	bands := 0
	streamBandHook = func(int) {
		if bands++; bands == 1 {
			live.Store(3)
		}
	}
	defer func() { streamBandHook = nil }()
	s := DefaultSettings()
	got, res := convertOpts(t, in, dir, "live", s, ConvertOptions{Threads: 1, LiveThreads: func() int { return int(live.Load()) }}, "main=jpeg")
	streamBandHook = nil
	want, ref := convertOpts(t, in, dir, "fixed", s, ConvertOptions{Threads: 1}, "main=jpeg")
	if !res.Streamed || bands < 3 {
		t.Fatalf("streamed %v in %d bands; want streamed, several bands", res.Streamed, bands)
	}
	if res.ThreadsMax != 3 || ref.ThreadsMax != 1 {
		t.Errorf("ThreadsMax %d grown, %d fixed; want 3 and 1", res.ThreadsMax, ref.ThreadsMax)
	}
	if d := maxCodeDiff(decodeImage(t, got[0]), decodeImage(t, want[0]), 8); d != 0 {
		t.Errorf("grown threads change the pixels by %d code values", d)
	}
}

// TestUnpackLiveThreads: a conversion that does not stream (LibRaw's AHD)
// whose thread count was raised between its admission and its start
// (ConvertOptions.LiveThreads above Threads) unpacks and counts its
// levels on the raised count (Result.ThreadsMax) and writes the same
// pixels as on a fixed single thread.
func TestUnpackLiveThreads(t *testing.T) {
	dir := t.TempDir()
	in := writeClipped(t, dir, 300, 600, 1, false)
	s := DefaultSettings()
	s.Demosaic = "ahd"
	got, res := convertOpts(t, in, dir, "live", s, ConvertOptions{Threads: 1, LiveThreads: func() int { return 2 }}, "main=jpeg")
	want, ref := convertOpts(t, in, dir, "fixed", s, ConvertOptions{Threads: 1}, "main=jpeg")
	if res.Streamed {
		t.Fatal("streamed: want LibRaw's whole-image demosaic")
	}
	if res.ThreadsMax != 2 || ref.ThreadsMax != 1 {
		t.Errorf("ThreadsMax %d raised, %d fixed; want 2 and 1", res.ThreadsMax, ref.ThreadsMax)
	}
	if d := maxCodeDiff(decodeImage(t, got[0]), decodeImage(t, want[0]), 8); d != 0 {
		t.Errorf("raised threads change the pixels by %d code values", d)
	}
}
