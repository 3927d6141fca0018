package batch

import (
	"testing"

	"github.com/rawbatch/rawbatch/pipeline"
)

// TestSettingsHashHighlights: --white-level and --highlights change the
// output, so they change the settings hash of the up-to-date records; their
// zero values hash as the defaults.
func TestSettingsHashHighlights(t *testing.T) {
	d := pipeline.DefaultSettings()
	zero := d
	zero.WhiteLevel, zero.Highlights = "", ""
	if SettingsHash(d) != SettingsHash(zero) {
		t.Error("zero white level and highlight mode hash unlike the defaults")
	}
	wl := d
	wl.WhiteLevel = pipeline.WhiteLevelLibRaw
	hl := d
	hl.Highlights = pipeline.HighlightsClip
	if h := SettingsHash(d); h == SettingsHash(wl) || h == SettingsHash(hl) || SettingsHash(wl) == SettingsHash(hl) {
		t.Error("--white-level or --highlights does not change the settings hash")
	}
}
