package pipeline

import (
	"encoding/json"
	"fmt"
)

// cacheMeta is what the stage cache stores with a decoded image besides its
// pixels (cache.PutMeta, as JSON): the white balance chosen when the image
// was decoded, so that a later hit reports it (issue 12 fix point 1), and
// the demosaic it got with the warning of rcd's fallback, so that a hit
// reports and repeats them (issue 14 fix point 1; demosaicused.go).
type cacheMeta struct {
	WhiteBalance     *WhiteBalanceUsed `json:"white_balance,omitempty"`
	Demosaic         string            `json:"demosaic,omitempty"`
	DemosaicFallback string            `json:"demosaic_fallback,omitempty"`
}

// encodeCacheMeta returns the metadata stored with the file's cache entry.
func (j *job) encodeCacheMeta() []byte {
	b, err := json.Marshal(cacheMeta{WhiteBalance: j.whiteBalanceResult(), Demosaic: j.demosaicUsed, DemosaicFallback: j.demosaicFallback})
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
	j.wb = *j.cached.meta.WhiteBalance
	j.wb.Reason = fmt.Sprintf("%s; from the stage cache (chosen when the decoded image was stored)", j.wb.Reason)
	if j.settings.WhiteBalance.Mode == "camera" && j.wb.Source != "as shot" {
		j.warnings = append(j.warnings, j.wb.note())
	}
	return true
}
