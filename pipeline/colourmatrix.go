package pipeline

import (
	"strings"

	"github.com/rawbatch/rawbatch/pipeline/internal/libraw"
)

// noMatrixWarning returns the per-file warning for a camera LibRaw has no
// colour matrix for (libraw.Info.HasColourMatrix), "" when it has one:
// the conversion then treats camera RGB as sRGB (identity matrix).
func noMatrixWarning(in libraw.Info) string {
	if in.HasColourMatrix() {
		return ""
	}
	cam := strings.TrimSpace(in.Make + " " + in.Model)
	if cam == "" {
		cam = "this camera"
	}
	return "LibRaw " + libraw.ShortVersion() + " has no colour matrix for " + cam + ": used an identity matrix, colours will be wrong"
}
