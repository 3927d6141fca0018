package batch

import "github.com/rawbatch/rawbatch/pipeline"

// lookHashParts are SettingsHash's parts of issue 12's look: the exposure
// anchor, the look, and the version of the default tone curve (v2: the
// parametric curve applied by RGB tone, which replaced the per-channel
// filmic one), so outputs of an older rendering are converted again.
func lookHashParts(s pipeline.Settings) []string {
	return []string{"tone-v2", string(s.ExposureAnchor), string(s.Look)}
}
