package pipeline

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/rawbatch/rawbatch/cache"
	"github.com/rawbatch/rawbatch/internal/rawerr"
)

// TestNeedsWholeStops: a conversion admitted at a streamed estimate below
// its whole-image one (ConvertOptions.Admitted < Whole) that finds at its
// demosaic that it must make the whole image (here a stage cache hit for
// a sharpened variant, which cannot stream from the entry's rows) stops
// with rawerr.ErrNeedsWhole before decoding and writes nothing; admitted
// at the whole estimate it converts from the cache.
func TestNeedsWholeStops(t *testing.T) {
	dir := t.TempDir()
	in := writeClipped(t, dir, 160, 120, 1, false)
	c, err := cache.Open(filepath.Join(dir, "cache"), 0)
	if err != nil {
		t.Fatal(err)
	}
	s := DefaultSettings()
	// A kept run leaves the decoded image in the cache.
	convertOpts(t, in, dir, "kept", s, ConvertOptions{Cache: &CacheOptions{Cache: c, Keep: true}}, "main=jpeg")

	s.Variants = variants(t, "main=jpeg,sharpen=0.5")
	out := filepath.Join(dir, "stopped.jpg")
	opts := ConvertOptions{Cache: &CacheOptions{Cache: c}, Admitted: 1 << 20, Whole: 4 << 20}
	_, err = ConvertOutputs(context.Background(), in, []OutputSpec{{Variant: s.Variants[0], Path: out}}, s, opts)
	if !errors.Is(err, rawerr.ErrNeedsWhole) {
		t.Fatalf("admitted to stream, a cache hit: err %v, want ErrNeedsWhole", err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("stopped conversion left %s (%v)", out, err)
	}
	opts.Admitted = opts.Whole
	_, res := convertOpts(t, in, dir, "whole", s, opts, "main=jpeg,sharpen=0.5")
	if !res.FromCache {
		t.Error("admitted whole: not converted from the cache")
	}
}
