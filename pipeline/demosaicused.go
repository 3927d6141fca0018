package pipeline

import (
	"strings"

	"github.com/rawbatch/rawbatch/pipeline/internal/libraw"
)

// What a file's demosaic actually was (issue 14 fix point 1): --demosaic
// names what was asked; rcd falls back to LibRaw's AHD for the files it
// does not take, LibRaw itself takes VNG for four-colour CFAs and its
// Markesteijn X-Trans demosaic for X-Trans, and a half-size decode or a
// file without a CFA is not demosaiced at all.

// Names of demosaics a file can get beyond the --demosaic values
// (Result.Demosaic).
const (
	// DemosaicNone: the image was not demosaiced (half-size decode: each
	// CFA block is one pixel; linear DNG, Foveon, ...: no CFA).
	DemosaicNone = "none"
	// DemosaicXTrans: LibRaw's X-Trans demosaic (Markesteijn,
	// xtrans_interpolate), which it runs for X-Trans files whatever
	// --demosaic asks beyond linear and VNG.
	DemosaicXTrans = "xtrans"
)

// demosaicState is what the demosaic stage (or the stage cache's entry)
// says of the demosaic: used, the algorithm; fallback, the warning given
// when --demosaic rcd fell back to LibRaw's ("" otherwise), repeated on a
// cache hit.
type demosaicState struct {
	demosaicUsed     string
	demosaicFallback string
}

// libRawDemosaic names the demosaic LibRaw 0.21's dcraw_process runs for a
// file of info decoded with settings s (rcd counted as its stand-in, AHD):
// none without a CFA (filters 0) or at half size; linear and VNG as asked;
// VNG for more than three colours; X-Trans's own for filters 9; else the
// algorithm asked (PPG only on a Bayer pattern, AHD otherwise).
func libRawDemosaic(info libraw.Info, s Settings) string {
	if info.Filters == 0 || s.HalfSize {
		return DemosaicNone
	}
	asked := s.Demosaic
	if asked == "rcd" || asked == "" {
		asked = "ahd"
	}
	switch {
	case asked == "linear":
		return "linear"
	case asked == "vng" || info.Colors > 3:
		return "vng"
	case asked == "ppg" && info.Filters > 1000:
		return "ppg"
	case info.Filters == 9:
		return DemosaicXTrans
	case asked == "ppg":
		return "ahd"
	}
	return string(asked)
}

// demosaicResult is the demosaic for Result ("" when the file was not
// decoded, nor read from the stage cache).
func (j *job) demosaicResult() string {
	if !j.decoded && !j.fromCache {
		return ""
	}
	return j.demosaicUsed
}

// cachedDemosaic sets the demosaic state from the stage cache entry's
// metadata on a hit, repeating the fallback warning given when the entry
// was stored. An entry stored without it (an older build) says nothing of
// a fallback; its demosaic is then what LibRaw would run, or rcd when
// rawbatch's own would have been tried.
func (j *job) cachedDemosaic() {
	m := j.cached.meta
	j.demosaicUsed, j.demosaicFallback = m.Demosaic, m.DemosaicFallback
	if j.demosaicUsed == "" {
		j.demosaicUsed = libRawDemosaic(j.info, j.settings)
		if ownDemosaic(j.settings) && j.info.Filters > 1000 && j.info.Colors == 3 {
			j.demosaicUsed = "rcd"
		}
	}
	if j.demosaicFallback != "" {
		j.warnings = append(j.warnings, j.demosaicFallback)
	}
}

// libRawDemosaicNote says in a warning what LibRaw did instead of rcd
// with its demosaic d: "demosaiced by LibRaw's AHD", "... X-Trans
// (Markesteijn)", or, for a file without a CFA, that it needed none.
func libRawDemosaicNote(d string) string {
	switch d {
	case DemosaicNone:
		return "processed by LibRaw, which has nothing to demosaic"
	case DemosaicXTrans:
		return "demosaiced by LibRaw's X-Trans (Markesteijn)"
	}
	return "demosaiced by LibRaw's " + strings.ToUpper(d)
}
