package pipeline

import (
	"fmt"

	"github.com/rawbatch/rawbatch/cache"
	"github.com/rawbatch/rawbatch/pipeline/internal/libraw"
	"github.com/rawbatch/rawbatch/pipeline/state"
)

// CacheOptions turns on the stage cache for a conversion: the decoded,
// demosaiced, linear camera-RGB image (the output of the demosaic stage) is
// read from Cache instead of decoding when present. All variants of a file
// are written by one process from one decode held in memory, so the image
// is stored only with Keep, for later runs (adding a variant decodes
// nothing); without Keep an entry that was read is deleted once every
// variant of the file is written.
type CacheOptions struct {
	Cache *cache.Cache
	Keep  bool
}

// cacheEntry is a decoded image read from the cache: W×H×C float32,
// mapped read-only.
type cacheEntry struct {
	entry   *cache.Entry
	pix     []float32
	w, h, c int
}

// CacheKey returns the stage cache key of an input: its content hash (XXH3
// of the whole file), the settings that change the decode (demosaic, white
// balance, highlight mode, half size) and the LibRaw version; package cache
// adds its format version.
func CacheKey(contentHash string, s Settings) string {
	return cache.Key(contentHash, string(s.Demosaic), s.WhiteBalance.String(), fmt.Sprint(s.Highlight),
		fmt.Sprint(s.HalfSize), libraw.Version())
}

// lookupCache computes the file's cache key and reads its entry, if any. A
// corrupt entry has been deleted by the cache and counts as a miss.
func (j *job) lookupCache() error {
	if j.cache == nil || j.cache.Cache == nil {
		return nil
	}
	hash, _, _, err := state.HashFile(j.in)
	if err != nil {
		return err
	}
	j.cacheKey = CacheKey(hash, j.settings)
	e, err := j.cache.Cache.Get(j.cacheKey)
	if err != nil {
		return nil // a miss or a corrupt entry: decode
	}
	j.cached = &cacheEntry{entry: e, pix: e.Pix, w: e.W, h: e.H, c: e.C}
	return nil
}

// storeCache writes the decoded image to the cache (before the camera
// matrix changes it in place). A failure to cache is not a failure to
// convert; it becomes a warning.
func (j *job) storeCache() {
	if j.cache == nil || j.cache.Cache == nil || j.cacheKey == "" || !j.cache.Keep {
		return
	}
	if err := j.cache.Cache.Put(j.cacheKey, j.img.W, j.img.H, j.colors, j.camera); err != nil {
		j.warnings = append(j.warnings, "not cached: "+err.Error())
	}
}

// releaseCached unmaps the cache entry once its pixels have been copied.
func (j *job) releaseCached() {
	if j.cached != nil && j.cached.entry != nil {
		j.cached.entry.Close()
		j.cached.entry = nil
	}
}

// finishCache deletes the file's entry when every variant is written,
// unless the cache is to be kept.
func (j *job) finishCache() {
	if j.cache != nil && j.cache.Cache != nil && !j.cache.Keep && j.cacheKey != "" {
		j.cache.Cache.Delete(j.cacheKey)
	}
}
