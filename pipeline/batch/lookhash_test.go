package batch

import (
	"testing"

	"github.com/rawbatch/rawbatch/pipeline"
)

// TestSettingsHashLook: the exposure anchor and the look are part of the
// settings hash, so changing them converts again.
func TestSettingsHashLook(t *testing.T) {
	base := pipeline.DefaultSettings()
	anchor, look := base, base
	anchor.ExposureAnchor = pipeline.AnchorNone
	look.Look = pipeline.LookCamera
	h := map[string]bool{SettingsHash(base): true, SettingsHash(anchor): true, SettingsHash(look): true}
	if len(h) != 3 {
		t.Errorf("hashes of default, anchor none and look camera are not all different: %v", h)
	}
}
