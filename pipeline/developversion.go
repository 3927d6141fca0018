package pipeline

import (
	"strconv"
	"strings"
)

// DevelopVersion identifies the develop that writes outputs: the names of
// Stages in order, each with its Version ("open.0 whitebalance.0 ...").
// Adding, removing or reordering a stage, or bumping a stage's Version,
// changes it; the batch runner's settings hash includes it, so that outputs
// written by another develop are stale even when the build's version
// string is the same (a developer build is "dev" before and after).
func DevelopVersion() string { return developVersion(Stages) }

// developVersion is DevelopVersion of the stage list stages.
func developVersion(stages []Stage) string {
	parts := make([]string, len(stages))
	for i, st := range stages {
		parts[i] = st.Name + "." + strconv.Itoa(st.Version)
	}
	return strings.Join(parts, " ")
}
