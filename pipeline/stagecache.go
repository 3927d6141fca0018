package pipeline

import (
	"encoding/json"
	"fmt"

	"github.com/rawbatch/rawbatch/cache"
	"github.com/rawbatch/rawbatch/internal/filehash"
	"github.com/rawbatch/rawbatch/pipeline/internal/libraw"
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

// cacheEntry is a decoded image read from the cache: W×H×C float32 in
// [0, 1], converted from the entry's 16-bit samples into a buffer of the
// job's own (nothing of the entry file stays mapped or open), which the
// stages change in place as they do a decoded image.
type cacheEntry struct {
	pix     []float32 // nil once releaseCached gave it back
	w, h, c int
	meta    cacheMeta // what was stored with the image (encodeCacheMeta)
}

// CacheKey returns the stage cache key of an input: its content hash (XXH3
// of the whole file), the settings that change the decode (demosaic, white
// balance, highlight mode, half size, white level, highlights and DNG opcodes) and the
// LibRaw version; package cache adds its format version.
func CacheKey(contentHash string, s Settings) string {
	return cache.Key(append([]string{contentHash, string(s.Demosaic), s.WhiteBalance.String(), fmt.Sprint(s.Highlight),
		fmt.Sprint(s.HalfSize), libraw.Version()}, s.rawsideParts()...)...)
}

// CacheEntryBytes is the size in bytes of the stage cache's entry for a
// file described by fi decoded with s: three 16-bit channels of its
// DecodedSize and the entry's header (cache.EntryBytes; the few hundred
// bytes of metadata stored with it are not counted).
func CacheEntryBytes(fi FileInfo, s Settings) int64 {
	w, h := DecodedSize(fi, s)
	return cache.EntryBytes(w, h, 3)
}

// lookupCache computes the file's cache key and reads its entry, if any. A
// corrupt entry has been deleted by the cache and counts as a miss. So does
// an entry whose size is not the size this file decodes to (cacheMismatch):
// it is closed and deleted, a warning says so, and the file is decoded.
// It runs in stageOpen, once LibRaw has opened the file and j.hdr is set.
func (j *job) lookupCache() error {
	if j.cache == nil || j.cache.Cache == nil {
		return nil
	}
	hash := j.inputHash // taken just before decoding (ConvertOutputs)
	if hash == "" {
		var err error
		if hash, _, _, err = filehash.File(j.in, nil); err != nil {
			return err
		}
	}
	j.cacheKey = CacheKey(hash, j.settings)
	e, err := j.cache.Cache.Get(j.cacheKey)
	if err != nil {
		return nil // a miss or a corrupt entry: decode
	}
	if msg := j.cacheMismatch(e.W, e.H, e.C); msg != "" {
		j.cache.Cache.Delete(j.cacheKey)
		j.warnings = append(j.warnings, "stage cache entry not used, decoded instead: "+msg)
		return nil
	}
	j.cached = &cacheEntry{pix: e.Pix, w: e.W, h: e.H, c: e.C, meta: decodeCacheMeta(e.Meta)}
	return nil
}

// cacheMismatch returns "" if a cached image of w×h pixels and c channels
// can be this file's decoded image, else why not. The channels must be
// LibRaw's colour count for the file (1..4, which toWorking relies on).
// The width and height must be the size the demosaic stage produces
// (decodedSize) when it is known before decoding; when it is not (the
// header's size is not LibRaw's, or a half-size decode of a Fuji SuperCCD
// or non-square-pixel file), the entry is trusted on its key, which
// package cache checks against the one recorded in the entry.
func (j *job) cacheMismatch(w, h, c int) string {
	if c < 1 || c > 4 || c != j.info.Colors {
		return fmt.Sprintf("the entry has %d channels per pixel, the file %d", c, j.info.Colors)
	}
	if ew, eh, ok := j.decodedSize(); ok && (w != ew || h != eh) {
		return fmt.Sprintf("the entry is %d×%d pixels, the file decodes to %d×%d", w, h, ew, eh)
	}
	return ""
}

// decodedSize returns the width and height in pixels of the image the
// demosaic stage decodes (unrotated, halved with HalfSize), and whether
// they are known before decoding. They are when the header's size comes
// from LibRaw (j.hdr.SizeFromLibRaw: its output size after Fuji rotation,
// pixel-aspect stretch and the flip): that size, unflipped; with HalfSize,
// the visible size j.info.Width×Height halved rounding up (LibRaw's shrink
// for CFA data, halve for the rest), provided no rotation or stretch
// changed it.
func (j *job) decodedSize() (w, h int, ok bool) {
	if j.hdr == nil || !j.hdr.SizeFromLibRaw || j.hdr.Width <= 0 || j.hdr.Height <= 0 {
		return 0, 0, false
	}
	w, h = j.hdr.Width, j.hdr.Height
	if j.info.Flip&4 != 0 {
		w, h = h, w
	}
	if j.settings.HalfSize {
		if w != j.info.Width || h != j.info.Height {
			return 0, 0, false
		}
		w, h = halvedIf(true, w, h) // DecodedSize's rule, for every sensor
	}
	w, h = croppedSize(j.hdr, j.settings, w, h) // the cache stores the crop stage's image
	return w, h, true
}

// storeCache writes the decoded image to the cache (before the camera
// matrix changes it in place), as 16-bit samples: the cache rounds each
// to the nearest k/65535, which LibRaw's image already is; reconstructed
// highlights (and a [0, 1] demosaic of our own) move by less than
// 1/131070 (TestStageCache16Bit). A failure to cache is not a failure to
// convert; it becomes a warning.
func (j *job) storeCache() {
	if !j.cacheStores() {
		return
	}
	if err := j.cache.Cache.PutMeta(j.cacheKey, j.img.W, j.img.H, j.colors, j.camera, j.encodeCacheMeta()); err != nil {
		j.warnings = append(j.warnings, "not cached: "+err.Error())
	}
}

// releaseCached drops the job's reference to the cached image's buffer,
// once the camera matrix has made the working image (in place, or a new
// buffer), so that the garbage collector can free the buffer when nothing
// else holds it.
func (j *job) releaseCached() {
	if j.cached != nil {
		j.cached.pix = nil
	}
}

// finishCache deletes the file's entry when every variant is written,
// unless the cache is to be kept.
func (j *job) finishCache() {
	if j.cache != nil && j.cache.Cache != nil && !j.cache.Keep && j.cacheKey != "" {
		j.cache.Cache.Delete(j.cacheKey)
	}
}

// cacheStores reports whether the highlights stage stores the decoded
// image in the stage cache (the cache is kept after the run).
func (j *job) cacheStores() bool {
	return j.cache != nil && j.cache.Cache != nil && j.cacheKey != "" && j.cache.Keep
}

// cacheMeta is what the stage cache stores with a decoded image besides its
// pixels (cache.PutMeta, as JSON): the white balance chosen when the image
// was decoded, so that a later hit reports it, and
// the demosaic it got with the warning of rcd's fallback, so that a hit
// reports and repeats them.
type cacheMeta struct {
	WhiteBalance     *cachedWB `json:"white_balance,omitempty"`
	Demosaic         string    `json:"demosaic,omitempty"`
	DemosaicFallback string    `json:"demosaic_fallback,omitempty"`
}

// cachedWB is a WhiteBalanceUsed as the cache entries store it, under Go's
// field names: the entries' format, which the names WhiteBalanceUsed has
// in the report do not change.
type cachedWB struct {
	Multipliers  [3]float64
	Source       string
	Reason       string
	EstimatedCCT float64 `json:",omitempty"`
	CorrectedCCT float64 `json:",omitempty"`
}

// encodeCacheMeta returns the metadata stored with the file's cache entry.
func (j *job) encodeCacheMeta() []byte {
	m := cacheMeta{Demosaic: j.demosaicUsed, DemosaicFallback: j.demosaicFallback}
	if w := j.whiteBalanceResult(); w != nil {
		m.WhiteBalance = &cachedWB{Multipliers: w.Multipliers, Source: w.Source, Reason: string(w.Reason), EstimatedCCT: w.EstimatedCCT, CorrectedCCT: w.CorrectedCCT}
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil // cannot happen for these types; the entry is stored without it
	}
	return b
}

// decodeCacheMeta reads an entry's metadata; an entry without any (or with
// metadata this build cannot read) gives the zero cacheMeta.
func decodeCacheMeta(b []byte) cacheMeta {
	var m cacheMeta
	if len(b) > 0 && json.Unmarshal(b, &m) != nil {
		return cacheMeta{}
	}
	return m
}

// cachedWhiteBalance sets j.wb from the cache entry's metadata on a stage
// cache hit: the white balance chosen when the entry was stored, its
// source as it was and a note in its reason that it came from the cache.
// It reports false when the entry carries none (the caller then says what
// it can from the file's tags).
func (j *job) cachedWhiteBalance() bool {
	if j.cached == nil || j.cached.meta.WhiteBalance == nil || j.cached.meta.WhiteBalance.Source == "" {
		return false
	}
	w := j.cached.meta.WhiteBalance
	j.wb = WhiteBalanceUsed{Multipliers: w.Multipliers, Source: w.Source, Reason: Text(w.Reason), EstimatedCCT: w.EstimatedCCT, CorrectedCCT: w.CorrectedCCT}
	j.wb.Reason = Text(fmt.Sprintf("%s; from the stage cache (chosen when the decoded image was stored)", j.wb.Reason))
	if j.settings.WhiteBalance.Mode == "camera" && j.wb.Source != "as shot" {
		j.warnings = append(j.warnings, j.wb.note())
	}
	return true
}
