package pipeline

import "fmt"

// WhiteLevelMode chooses where the white (clipping) level of the raw data
// comes from (the white-level stage, docs/highlights.md).
type WhiteLevelMode string

const (
	// WhiteLevelData: the clipping pile of each CFA channel's histogram
	// (highlight.WhiteLevels), all channels rescaled to clip together
	// (highlight.Equalise, libraw's RescaleRaw), so clipped areas come out
	// neutral. The default.
	WhiteLevelData WhiteLevelMode = "data"
	// WhiteLevelLibRaw: LibRaw's own white level (the tagged level, or the
	// data maximum when it lies above 75 % of it: adjust_maximum_thr), as
	// dcraw_emu uses; for comparisons with it.
	WhiteLevelLibRaw WhiteLevelMode = "libraw"
)

// WhiteLevelNames lists the accepted --white-level values.
const WhiteLevelNames = "data|libraw"

// ParseWhiteLevel accepts one of WhiteLevelNames, case-insensitively.
func ParseWhiteLevel(s string) (WhiteLevelMode, error) {
	return parseChoice[WhiteLevelMode]("white level", WhiteLevelNames, s)
}

// HighlightMode is what the highlights stage does with clipped pixels of
// the demosaiced camera RGB (docs/highlights.md).
type HighlightMode string

const (
	// HighlightsClip: clipped areas become neutral white (highlight.Clip).
	HighlightsClip HighlightMode = "clip"
	// HighlightsReconstruct: clipped pixels take the colour of nearby
	// unclipped ones, fading into white (highlight.Reconstruct). The
	// default.
	HighlightsReconstruct HighlightMode = "reconstruct"
)

// HighlightNames lists the accepted --highlights values.
const HighlightNames = "clip|reconstruct"

// ParseHighlights accepts one of HighlightNames, case-insensitively.
func ParseHighlights(s string) (HighlightMode, error) {
	return parseChoice[HighlightMode]("highlight mode", HighlightNames, s)
}

// whiteLevel is s.WhiteLevel, "" meaning the default (data).
func (s Settings) whiteLevel() WhiteLevelMode {
	if s.WhiteLevel == "" {
		return WhiteLevelData
	}
	return s.WhiteLevel
}

// highlights is s.Highlights, "" meaning the default (reconstruct).
func (s Settings) highlights() HighlightMode {
	if s.Highlights == "" {
		return HighlightsReconstruct
	}
	return s.Highlights
}

// rawsideParts are the settings of the white-level, crop, highlights and
// DNG opcode stages as strings, for the stage cache key and the output
// settings hash (all change the decoded image).
func (s Settings) rawsideParts() []string {
	return append([]string{"white-level=" + string(s.whiteLevel()), "highlights=" + string(s.highlights()), "crop=" + string(s.crop())}, s.opcodeParts()...)
}

// validateHighlights reports an invalid WhiteLevel or Highlights, and a
// LibRaw highlight mode (Highlight) other than 0: the highlights stage
// needs LibRaw to clip (mode 0) and does the rest itself.
func (s Settings) validateHighlights() error {
	if _, err := ParseWhiteLevel(string(s.whiteLevel())); err != nil {
		return err
	}
	if _, err := ParseHighlights(string(s.highlights())); err != nil {
		return err
	}
	if s.Highlight != 0 {
		return fmt.Errorf("LibRaw highlight mode %d: no longer used; LibRaw clips (mode 0) and Highlights (%s) does the rest", s.Highlight, HighlightNames)
	}
	return nil
}
