package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/rawbatch/rawbatch/cache"
	"github.com/rawbatch/rawbatch/internal/filehash"
	"github.com/rawbatch/rawbatch/internal/rawerr"
	"github.com/rawbatch/rawbatch/pipeline/colour"
	"github.com/rawbatch/rawbatch/pipeline/internal/libraw"
	"github.com/rawbatch/rawbatch/pipeline/internal/par"
	"github.com/rawbatch/rawbatch/pipeline/internal/thp"
	"github.com/rawbatch/rawbatch/pipeline/look"
)

// The stage cache (docs/variants.md "The stage cache"): an entry is the develop's last
// per-file scene-referred image, the camera RGB after every stage from the
// demosaic to the cache point (cachePoint: highlights, DNG opcodes,
// denoise, lens, capture sharpening), as the two-pass stream's pass 1
// stores it (look.Image16: upright rows of 16-bit codes of stream16Scale,
// in bands of streamRows rows, 6 bytes a pixel), with what those stages
// found (cacheMeta). A streamed conversion writes its stored rows as they
// are (stream.firstPass); the whole-image path writes its image turned
// upright, converted in bands. A hit skips every step from unpack to the
// cache point: a file that streams runs the stream's last pass only (the
// anchor on the stored rows, the fused pass, the encoder), any other
// converts the rows to its float image in parallel bands and goes on from
// there.

// cachePoint is the last stage whose output the stage cache stores;
// cacheMeasured the last one whose findings it stores (the exposure
// anchor, which measures the cache point's image and changes no pixel).
var (
	cachePoint    = sharpenStage.Name
	cacheMeasured = anchorStage.Name
)

// cacheFirst and cacheLast are the indexes in Stages of the demosaic and
// of cacheMeasured, cacheDevelop the DevelopVersion of the stages up to
// cacheMeasured (set by init: the open stage, in Stages, looks the cache
// up).
var (
	cacheFirst, cacheLast int
	cacheDevelop          string
)

func init() {
	for i := range Stages {
		switch Stages[i].Name {
		case demosaicStage.Name:
			cacheFirst = i
		case cacheMeasured:
			cacheLast = i
		}
	}
	cacheDevelop = developVersion(Stages[:cacheLast+1])
}

// cachedStage reports whether a step of the stage named name is one a
// stage cache hit skips: from the demosaic to the exposure anchor.
func cachedStage(name string) bool {
	for i := cacheFirst; i <= cacheLast; i++ {
		if Stages[i].Name == name {
			return true
		}
	}
	return false
}

// CacheOptions turns on the stage cache for a conversion: the image of
// the cache point (the camera RGB after capture sharpening) is read from
// Cache instead of decoding and developing it when present. All variants
// of a file are written by one process from one develop held in memory,
// so the image is stored only with Keep, for later runs (adding a variant
// decodes nothing). A conversion without Keep reads an entry and leaves
// it in place: another run kept it for its own later runs. Entries go
// only by the size cap's eviction, by `rawbatch cache clear`, or when
// found corrupt or not the file's (lookupCache).
type CacheOptions struct {
	Cache *cache.Cache
	Keep  bool
}

// cacheEntry is an entry read from the stage cache: the cache point's
// image as the stream stores it (upright 16-bit rows in bands, views of
// the entry file mapped read-only: cache.MapSamples) and what was stored
// with it.
type cacheEntry struct {
	img   look.Image16 // Rows nil once releaseCached gave them back
	unmap func()       // unmaps the entry file
	meta  cacheMeta
}

// CacheKey returns the stage cache key of an input: its content hash (XXH3
// of the whole file), the LibRaw version and cacheParts (the stages up to
// the cache point and their settings); package cache adds its format
// version.
func CacheKey(contentHash string, s Settings) string {
	return cache.Key(append([]string{contentHash, libraw.Version()}, cacheParts(s)...)...)
}

// cacheParts is what changes the pixels of the cache point's image and
// what the anchor finds on it: the DevelopVersion of the stages up to the
// anchor (a stage's Version bump makes every entry stale) and the parts
// of DevelopHash of the settings of those stages (demosaic, white
// balance, highlights, half size, white level, crop, DNG opcodes,
// denoise, capture sharpening, lens; when the preview is measured, the
// anchor, the look, the tone curve and BaselineExposure), built by the
// same functions.
func cacheParts(s Settings) []string {
	parts := []string{cacheDevelop, string(s.Demosaic), s.WhiteBalance.String(),
		fmt.Sprint(s.Highlight), fmt.Sprint(s.HalfSize)}
	parts = append(parts, s.rawsideParts()...)
	parts = append(parts, "denoise="+s.denoise(), "capture-sharpen="+s.captureSharpen())
	parts = append(parts, lensHashParts(s)...)
	parts = append(parts, s.Edit.rawParts()...)
	if s.Edit.Orientation != 0 {
		// The entry is stored turned by the file's orientation.
		parts = append(parts, fmt.Sprintf("edit-orientation=%d", s.Edit.Orientation))
	}
	if s.needsPreview() {
		// The anchor's findings: its settings' parts, as DevelopHash's.
		parts = append(parts, "tone-v2", string(s.ExposureAnchor), string(s.Look), string(s.Tone), fmt.Sprint(s.BaselineExposure))
	}
	return parts
}

// CacheEntryBytes is the size in bytes of the stage cache's entry for a
// file described by fi decoded with s (at half size when the half-size
// tier takes it, WithHalfSizeTier, as EstimateMemory counts it): three
// 16-bit channels of its DecodedSize and the entry's header
// (cache.EntryBytes; the metadata stored with it, at most a few KiB, is
// not counted).
func CacheEntryBytes(fi FileInfo, s Settings) int64 {
	s, _ = WithHalfSizeTier(fi, s, s.OutputVariants())
	w, h := DecodedSize(fi, s)
	return cache.EntryBytes(w, h, 3)
}

// lookupCache computes the file's cache key and reads its entry, if any. A
// corrupt entry has been deleted by the cache and counts as a miss. So does
// an entry that cannot be this file's (cacheMismatch): it is deleted, a
// warning says so, and the file is decoded. It runs in stageOpen, once
// LibRaw has opened the file and j.hdr is set.
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
	e, unmap, err := j.cache.Cache.MapSamples(j.cacheKey)
	if err != nil {
		return nil // a miss or a corrupt entry: decode
	}
	meta, ok := decodeCacheMeta(e.Meta)
	if !ok {
		meta.Flip = j.info.Flip & 7
	}
	msg := j.cacheMismatch(e.W, e.H, e.C, meta.Flip)
	switch {
	case msg != "":
	case !ok:
		msg = "its metadata is unreadable"
	case j.settings.needsPreview() && meta.Anchor == nil:
		msg = "it has no exposure anchor"
	}
	if msg != "" {
		unmap()
		j.cache.Cache.Delete(j.cacheKey)
		j.warnings = append(j.warnings, "stage cache entry not used, decoded instead: "+msg)
		return nil
	}
	w, h := e.W, e.H
	if meta.Flip&4 != 0 {
		w, h = h, w
	}
	j.cached = &cacheEntry{img: look.Image16{W: w, H: h, Rows: e.Bands, Band: e.Band, Scale: stream16Scale, Flip: meta.Flip}, unmap: unmap, meta: meta}
	return nil
}

// cacheMismatch returns "" if a cached image stored upright as w×h pixels
// of c channels, turned by flip, can be this file's, else why not. It
// must have 3 channels and the file's orientation; its size (unturned)
// must be the size the crop stage makes (decodedSize) when that is known
// before decoding; when it is not (the header's size is not LibRaw's, or a
// half-size decode of a Fuji SuperCCD or non-square-pixel file), the
// entry is trusted on its key, which package cache checks against the one
// recorded in the entry.
func (j *job) cacheMismatch(w, h, c, flip int) string {
	if c != 3 {
		return fmt.Sprintf("the entry has %d channels per pixel, want 3", c)
	}
	if flip != j.info.Flip&7 {
		return fmt.Sprintf("the entry is turned by flip %d, the file by %d", flip, j.info.Flip&7)
	}
	if flip&4 != 0 {
		w, h = h, w
	}
	if ew, eh, ok := j.decodedSize(); ok && (w != ew || h != eh) {
		return fmt.Sprintf("the entry is %d×%d pixels, the file decodes to %d×%d", w, h, ew, eh)
	}
	return ""
}

// decodedSize returns the width and height in pixels of the image the
// crop stage makes (unrotated, halved with HalfSize), and whether they
// are known before decoding. They are when the header's size comes from
// LibRaw (j.hdr.SizeFromLibRaw: its output size after Fuji rotation,
// pixel-aspect stretch and the flip): that size, unflipped; with HalfSize,
// the visible size j.info.Width×Height halved rounding up (LibRaw's shrink
// for CFA data, halve for the rest), provided no rotation or stretch
// changed it; then cropped.
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

// cacheStores reports whether the conversion stores its cache point's
// image in the stage cache (the cache is kept after the run, and the
// image was not read from it).
func (j *job) cacheStores() bool {
	return j.cache != nil && j.cache.Cache != nil && j.cacheKey != "" && j.cache.Keep && j.cached == nil
}

// storeCache16 writes a stream's stored rows (pass 1's, finished to the
// cache point, at stream16Scale) as the file's entry, as they are. A
// failure to cache is not a failure to convert; it becomes a warning.
func (j *job) storeCache16(img look.Image16) {
	if !j.cacheStores() || img.Scale != stream16Scale || j.cameraLook != nil {
		return
	}
	uw, uh := img.W, img.H
	if img.Flip&4 != 0 {
		uw, uh = uh, uw
	}
	m := cache.Samples{W: uw, H: uh, C: 3, Band: img.Band, Bands: img.Rows, Meta: j.encodeCacheMeta(img.Flip)}
	if err := j.cache.Cache.PutSamples(j.cacheKey, m); err != nil {
		j.warnings = append(j.warnings, "not cached: "+err.Error())
	}
}

// storeCacheWhole writes the whole-image path's camera image (j.camera,
// W×H×3 in sensor orientation) as the file's entry once step n of plan,
// the last step up to the anchor (which changes no pixel), has run:
// turned upright and rounded to codes of stream16Scale (as the stream
// stores its rows), a band of streamRows rows at a time (cache.PutFunc:
// at most four bands' buffers). j.camera takes the rounded values too (as
// a two-pass stream's pass 2 reads its stored rows), so that this run's
// outputs and a later hit's are the same. A failure to cache becomes a
// warning.
func (j *job) storeCacheWhole(plan StagePlan, n int) {
	if !j.cacheStores() || j.stream != nil || j.camera == nil || j.colors != 3 || j.cameraLook != nil || !cachedStage(plan.Steps[n].Stage) ||
		n+1 < len(plan.Steps) && cachedStage(plan.Steps[n+1].Stage) {
		return
	}
	w, h, flip := j.img.W, j.img.H, j.info.Flip&7
	if len(j.camera) != 3*w*h {
		return
	}
	uw, uh := w, h
	if flip&4 != 0 {
		uw, uh = h, w
	}
	inv, sc := float32(1/stream16Scale), float32(stream16Scale)
	err := j.cache.Cache.PutFunc(j.cacheKey, uw, uh, 3, streamRows, func(k int, dst []uint16) {
		for y := k * streamRows; y < min(uh, (k+1)*streamRows); y++ {
			row := dst[3*uw*(y-k*streamRows):]
			for x := range uw {
				a, b := sensorOf(flip, w, h, x, y)
				p := j.camera[3*(b*w+a):]
				for c := range 3 {
					q := uint16(min(max(p[c]*inv+0.5, 0), 65535))
					row[3*x+c] = q
					p[c] = float32(q) * sc
				}
			}
		}
	}, j.encodeCacheMeta(flip))
	if err != nil {
		j.warnings = append(j.warnings, "not cached: "+err.Error())
	}
}

// sensorOf returns the pixel (a, b) of a w×h image in sensor orientation
// that the upright image turned by flip (look.Image16's rule) has at
// (x, y).
func sensorOf(flip, w, h, x, y int) (a, b int) {
	a, b = x, y
	if flip&4 != 0 {
		a, b = y, x
	}
	if flip&1 != 0 {
		a = w - 1 - a
	}
	if flip&2 != 0 {
		b = h - 1 - b
	}
	return a, b
}

// cacheMark notes, as the demosaic step is about to run, how many
// warnings were given before it: those given from there to the cache
// point are stored with the entry and repeated on a hit.
func (j *job) cacheMark(st Step) {
	if st.Stage == demosaicStage.Name {
		j.cacheWarn = len(j.warnings)
	}
}

// runFromCache runs the conversion from the stage cache's entry when the
// file had a hit, at step n of *plan: the preview step is skipped (next
// n+1); at the demosaic step every step up to the anchor is skipped and
// what they found is taken from the entry.
// A plan that streams (Step.Stream, ending in a fused pass, quantise and
// encode) runs the stream's last pass from the stored rows (done true:
// the conversion is over); otherwise the rows become j.camera, the whole
// path's float image, and next is the step to go on from. The plan is
// made again when the entry's size is not the plan's. Admitted to stream
// (ConvertOptions.Admitted below Whole), a hit fails with
// rawerr.ErrNeedsWhole before anything is done.
func (j *job) runFromCache(ctx context.Context, plan *StagePlan, n int, asked []*variantJob, res *Result, o ConvertOptions) (next int, done bool, err error) {
	j.cacheMark(plan.Steps[n])
	if j.cached != nil && plan.Steps[n].Stage == previewStage.Name {
		return n + 1, false, nil // the anchor's findings are the entry's
	}
	if j.cached == nil || plan.Steps[n].Stage != demosaicStage.Name {
		return n, false, nil
	}
	t0 := time.Now()
	if j.h != nil {
		j.h.Close() // no LibRaw decode
		j.h = nil
	}
	j.restoreCached()
	img := j.cached.img
	w, h := img.W, img.H
	if w != plan.W || h != plan.H {
		vs := make([]Variant, len(asked))
		for i, v := range asked {
			vs[i] = v.spec.Variant
		}
		again := PlanVariants(w, h, vs, j.settings)
		again.Steps = append(plan.Steps[:n:n], again.Steps[n:]...)
		*plan = again
		j.orderOutputs(*plan, asked)
	}
	next = n + 1
	for next < len(plan.Steps) && cachedStage(plan.Steps[next].Stage) {
		next++
	}
	if _, _, ok := cachedStreamTail(*plan, n, next, j); !ok && o.Admitted > 0 && o.Whole > o.Admitted {
		// Admitted to stream, the whole path's float image of the entry
		// is not within what it was admitted with (ConvertOptions.Admitted);
		// a hit that streams holds the mapped entry (its pages are the
		// cache's) and the last pass's buffers, less than a streamed
		// decode's raw data and window.
		return n, false, fmt.Errorf("%w (%.0f MiB admitted, %.0f MiB needed)", rawerr.ErrNeedsWhole,
			float64(o.Admitted)/(1<<20), float64(o.Whole)/(1<<20))
	}
	res.FromCache = true
	j.colors, j.img = 3, Image{W: w, H: h}
	if tims, ok, err := j.runCachedStream(ctx, *plan, n, next, asked, time.Since(t0)); ok {
		res.Timings = append(res.Timings, tims...)
		res.Streamed = err == nil
		return next, true, err
	}
	// The whole path: the float image, in sensor orientation.
	j.camera, j.colors = cameraFrom16(img), 3
	j.releaseCached()
	res.Timings = append(res.Timings, StageTiming{Stage: plan.Steps[n].Name, Duration: time.Since(t0)})
	return next, false, nil
}

// cameraFrom16 returns the image m stands for as W×H×3 float32 values in
// its own (sensor) orientation (the inverse of sensorOf), converted in
// parallel bands of rows: a stored row a sensor row, or with rows and
// columns swapped (flip&4) blocks of sensor rows, each stored row read
// once a block.
func cameraFrom16(m look.Image16) []float32 {
	w, h := m.W, m.H
	out := thp.Floats(3 * w * h)
	sc := float32(m.Scale)
	if m.Flip&4 == 0 {
		par.Rows(h, func(lo, hi int) {
			for b := lo; b < hi; b++ {
				y := b
				if m.Flip&2 != 0 {
					y = h - 1 - b
				}
				src, dst := m.Row(y), out[3*b*w:3*(b+1)*w]
				if m.Flip&1 == 0 {
					colour.DequantiseLinear16(dst, src, sc)
					continue
				}
				for a := range w {
					s := src[3*(w-1-a) : 3*(w-a)]
					dst[3*a], dst[3*a+1], dst[3*a+2] = float32(s[0])*sc, float32(s[1])*sc, float32(s[2])*sc
				}
			}
		})
		return out
	}
	// Swapped: sensor pixel (a, b) is stored at (b', a').
	const block = 32
	par.Range((h+block-1)/block, 1, func(lo, hi int) {
		for k := lo; k < hi; k++ {
			b0, b1 := k*block, min(h, (k+1)*block)
			for a := range w {
				y := a
				if m.Flip&1 != 0 {
					y = w - 1 - a
				}
				row := m.Row(y)
				for b := b0; b < b1; b++ {
					x := b
					if m.Flip&2 != 0 {
						x = h - 1 - b
					}
					s, d := row[3*x:3*x+3], out[3*(b*w+a):3*(b*w+a)+3]
					d[0], d[1], d[2] = float32(s[0])*sc, float32(s[1])*sc, float32(s[2])*sc
				}
			}
		}
	})
	return out
}

// runCachedStream runs a stage cache hit's conversion as the last pass of
// a two-pass stream (stream_twopass.go) from the entry's rows, when the
// plan streams: the steps from next that run alone (the anchor, on the
// stored rows), the fused pass to quantise and the encode step; ok false
// (nothing done) when the plan does not stream or the steps are not so.
// pre is the time the hit took so far, the demosaic step's timing.
func (j *job) runCachedStream(ctx context.Context, plan StagePlan, n, next int, asked []*variantJob, pre time.Duration) (tims []StageTiming, ok bool, err error) {
	steps := plan.Steps
	k, m, ok := cachedStreamTail(plan, n, next, j)
	if !ok {
		return nil, false, nil
	}
	img := j.cached.img
	uw, uh := img.W, img.H
	if img.Flip&4 != 0 {
		uw, uh = uh, uw
	}
	s := &stream{j: j, ctx: ctx, flip: img.Flip, w: uw, h: uh, two: &twoPass{img: img, final: true, anchor: -1}}
	j.stream = s
	defer func() {
		j.stream = nil
		j.releaseCached()
	}()
	tims = append(tims, StageTiming{Stage: steps[n].Name, Duration: pre})
	for i := next; i < k; i++ {
		j.cur = nil
		if steps[i].v >= 0 {
			j.cur = asked[steps[i].v]
		}
		t0 := time.Now()
		err := steps[i].stage.run(ctx, j)
		tims = append(tims, StageTiming{Stage: steps[i].Name, Duration: time.Since(t0)})
		if err != nil {
			return tims, true, err
		}
	}
	tims, err = j.passAndEncode(ctx, s, steps, k, m, asked, tims)
	return tims, true, err
}

// releaseCached unmaps the cached image's rows once they are converted to
// the whole path's float image, or the stream that reads them has ended
// (it does nothing while j.stream runs).
func (j *job) releaseCached() {
	if j.cached == nil || j.stream != nil {
		return
	}
	j.cached.img.Rows = nil
	if j.cached.unmap != nil {
		j.cached.unmap()
	}
}

// cacheMeta is what the stage cache stores with an image besides its
// pixels (cache.Samples.Meta, as JSON): what the stages up to the cache
// point chose and found, so that a hit reports them as the conversion that
// stored it did: the white balance, the demosaic and its fallback, the
// crop, the DNG opcodes, the noise reduction, the capture sharpening, the
// lens correction, the orientation the rows are turned by, and the
// warnings given from the demosaic to the anchor, and the anchor's
// findings.
type cacheMeta struct {
	Format           int             `json:"format"`
	WhiteBalance     *cachedWB       `json:"white_balance,omitempty"`
	Demosaic         string          `json:"demosaic,omitempty"`
	DemosaicFallback string          `json:"demosaic_fallback,omitempty"`
	Flip             int             `json:"flip"`
	Crop             *Crop           `json:"crop,omitempty"`
	CropFrame        [2]int          `json:"crop_frame"`
	Opcodes          *OpcodesResult  `json:"opcodes,omitempty"`
	LensByOpcodes    bool            `json:"lens_by_opcodes,omitempty"`
	Lens             *LensCorrection `json:"lens,omitempty"`
	Denoise          DenoiseUsed     `json:"denoise"`
	Sharpen          SharpenUsed     `json:"capture_sharpen"`
	Anchor           *cachedAnchor   `json:"anchor,omitempty"`
	Warnings         []string        `json:"warnings,omitempty"`
}

// cachedAnchor is what the exposure-anchor stage found (exposureState
// without a camera look: an entry is not stored with one).
type cachedAnchor struct {
	EV     float64 `json:"ev"`
	Source string  `json:"source"`
}

// cacheMetaFormat is cacheMeta.Format of this build's entries: an entry
// without it is not read.
const cacheMetaFormat = 1

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

// encodeCacheMeta returns the metadata stored with the file's cache entry,
// whose rows are turned by flip.
func (j *job) encodeCacheMeta(flip int) []byte {
	m := cacheMeta{Format: cacheMetaFormat, Demosaic: j.demosaicUsed, DemosaicFallback: j.demosaicFallback, Flip: flip,
		Crop: j.crop, CropFrame: j.cropFrame, LensByOpcodes: j.lensByOpcodes, Lens: j.lens,
		Denoise: j.denoiseUsed, Sharpen: j.sharpenUsed}
	if w := j.whiteBalanceResult(); w != nil {
		m.WhiteBalance = &cachedWB{Multipliers: w.Multipliers, Source: w.Source, Reason: string(w.Reason), EstimatedCCT: w.EstimatedCCT, CorrectedCCT: w.CorrectedCCT}
	}
	if j.opcodes.any && j.settings.dngOpcodes() != OpcodesOff {
		r := j.opcodes.result
		m.Opcodes = &r
	}
	if j.exposureSource != "" {
		m.Anchor = &cachedAnchor{EV: j.anchorEV, Source: j.exposureSource}
	}
	if j.cacheWarn <= len(j.warnings) {
		m.Warnings = j.warnings[j.cacheWarn:]
	}
	b, err := json.Marshal(m)
	if err != nil || len(b) > cache.MaxMetaBytes {
		return nil // the entry is then never used (decodeCacheMeta)
	}
	return b
}

// decodeCacheMeta reads an entry's metadata; ok false when there is none
// this build can read.
func decodeCacheMeta(b []byte) (m cacheMeta, ok bool) {
	if len(b) == 0 || json.Unmarshal(b, &m) != nil || m.Format != cacheMetaFormat {
		return cacheMeta{}, false
	}
	return m, true
}

// restoreCached sets what the stages up to the cache point record from the
// entry's metadata, on a hit, as they would have: the demosaic, the crop,
// the opcodes, the noise reduction, the capture sharpening and the lens
// correction, with the warnings they gave. The white balance is the white
// balance stage's (cachedWhiteBalance).
func (j *job) restoreCached() {
	m := j.cached.meta
	j.fromCache = true
	j.demosaicUsed, j.demosaicFallback = m.Demosaic, m.DemosaicFallback
	j.crop, j.cropFrame = m.Crop, m.CropFrame
	if m.Opcodes != nil {
		j.opcodes.result, j.opcodes.any = *m.Opcodes, true
	}
	j.lensByOpcodes, j.lens = m.LensByOpcodes, m.Lens
	j.denoiseUsed, j.sharpenUsed = m.Denoise, m.Sharpen
	if m.Anchor != nil {
		j.anchorEV, j.exposureSource = m.Anchor.EV, m.Anchor.Source
	}
	j.preview = nil
	j.warnings = append(j.warnings, m.Warnings...)
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

// cachedStreamTail reports whether a hit at step n (the demosaic's) of
// plan streams from the entry's rows: the plan streams, and after the
// skipped steps (up to next) it ends in one fused pass (steps k to m,
// ending in quantise) and one encode step.
func cachedStreamTail(plan StagePlan, n, next int, j *job) (k, m int, ok bool) {
	steps := plan.Steps
	if !steps[n].Stream || j.unfused || j.wholeImage {
		return 0, 0, false
	}
	k = next
	for k < len(steps) && steps[k].Pass == 0 {
		if steps[k].Stage == resizeStage.Name {
			return 0, 0, false // a downscaled variant resizes the whole image
		}
		k++
	}
	if k == len(steps) {
		return 0, 0, false
	}
	m = k
	for m+1 < len(steps) && steps[m+1].Pass == steps[k].Pass {
		m++
	}
	if steps[m].Stage != quantiseStage.Name || m+2 != len(steps) || steps[m+1].Stage != encodeStage.Name {
		return 0, 0, false
	}
	return k, m, true
}
