package pipeline

import (
	"fmt"
	"strings"

	"github.com/rawbatch/rawbatch/pipeline/encode"
)

// A Choice is a setting of Settings that names one of a few values
// (--white-level data|libraw, ...). Choices is the one table of them:
// Settings.Validate, DefaultSettings, the settings hash (DevelopHash) and
// the command line's flags, config keys and RAWBATCH_* variables all read
// it.
type Choice struct {
	// Name is the setting's name: the flag --Name, the config file key
	// and the variable RAWBATCH_NAME (dashes as underscores).
	Name string
	// What names the setting in errors: `unknown WHAT "x" (want a, b or c)`.
	What string
	// Values are the accepted values, lower case, "a|b|c" (parsed in any
	// case).
	Values string
	// Default is rawbatch convert's value without the flag: the flag's
	// default, and DefaultSettings' (parsed).
	Default string
	// Zero is the value that the field's zero value "" stands for (as in
	// Settings made by hand, or by callers older than the setting); ""
	// when the zero value is refused.
	Zero string
	// HashKey names the setting's part of DevelopHash: "KEY=value", the
	// zero value spelt as Zero. "" when the value enters the hash some
	// other way: as given, unkeyed (demosaic, exposure anchor, look: the
	// records' format), or per output (JPEG subsampling, in each JPEG
	// variant's subsampling).
	HashKey string
	// Help is the flag's help text.
	Help string

	// field is the Settings field the setting fills.
	field func(*Settings) *string
	// parse, when not nil, replaces the parse of Values, for a setting
	// stored otherwise than it is given (JPEG subsampling: auto is "").
	// Its errors start with the value (`"x": want ...`), so that they
	// follow the setting's name without a colon.
	parse func(string) (string, error)
}

// The table's rows, named for the develop's own reads. rcd is the
// default demosaic: faster than LibRaw's AHD and better on every ground
// truth of docs/pipeline.md's demosaic table.
var (
	demosaicChoice = &Choice{Name: "demosaic", What: "demosaic algorithm", Values: DemosaicNames, Default: "rcd",
		Help:  "demosaic algorithm: " + DemosaicNames + "; rcd (rawbatch's own) is for Bayer files: others, and --wb auto, get LibRaw's AHD (X-Trans its X-Trans demosaic) with a warning",
		field: func(s *Settings) *string { return (*string)(&s.Demosaic) }}
	whiteLevelChoice = &Choice{Name: "white-level", What: "white level", Values: "data|libraw", Default: "data", Zero: "data", HashKey: "white-level",
		Help:  "raw white level: data (each CFA channel's clipping level in the data, so clipped areas are neutral) or libraw (LibRaw's own, as dcraw_emu)",
		field: func(s *Settings) *string { return (*string)(&s.WhiteLevel) }}
	highlightsChoice = &Choice{Name: "highlights", What: "highlight mode", Values: HighlightNames, Default: "reconstruct", Zero: "reconstruct", HashKey: "highlights",
		Help:  "clipped highlights: reconstruct (colour from the unclipped neighbours, fading to white) or clip (neutral white)",
		field: func(s *Settings) *string { return (*string)(&s.Highlights) }}
	cropChoice = &Choice{Name: "crop", What: "crop", Values: "camera|sensor", Default: "camera", Zero: "camera", HashKey: "crop",
		Help:  "what the output covers: camera (the camera's picture area: DNG DefaultCrop, Canon SensorInfo, LibRaw's inset crop) or sensor (LibRaw's visible area)",
		field: func(s *Settings) *string { return (*string)(&s.Crop) }}
	opcodesChoice = &Choice{Name: "dng-opcodes", What: "DNG opcode mode", Values: "on|off", Default: "on", Zero: "on", HashKey: "dng-opcodes",
		Help:  "a DNG's own corrections (opcode lists: GainMap, FixVignetteRadial, WarpRectilinear): on (applied; others reported as not applied) or off",
		field: func(s *Settings) *string { return (*string)(&s.DNGOpcodes) }}
	anchorChoice = &Choice{Name: "exposure-anchor", What: "exposure anchor", Values: "preview|none", Default: "preview", Zero: "none",
		Help:  "exposure anchored to the embedded preview: preview (a correction of up to ±1.5 EV when the preview is usable) or none",
		field: func(s *Settings) *string { return (*string)(&s.ExposureAnchor) }}
	lookChoice = &Choice{Name: "look", What: "look", Values: "default|camera|neutral", Default: "default", Zero: "default",
		Help:  "rendering: default (tone curve, preview-anchored exposure), camera (fitted to the embedded preview per file) or neutral (tone curve, no preview anchoring)",
		field: func(s *Settings) *string { return (*string)(&s.Look) }}
	lensChoice = &Choice{Name: "lens", What: "lens correction", Values: "auto|off", Default: "auto", Zero: "auto", HashKey: "lens",
		Help:  "lens correction with lensfun: auto (vignetting, distortion and chromatic aberration when lensfun has a profile of the file's lens) or off",
		field: func(s *Settings) *string { return (*string)(&s.Lens) }}
	halfTierChoice = &Choice{Name: "half-size-tier", What: "half-size tier", Values: "auto|off", Default: "off", Zero: "off",
		Help:  "auto: a file whose variants all have a long edge of at most half the picture's (size=N, WxH; not %) is decoded at half size (as --half-size): faster, less detailed; off: the full decode",
		field: func(s *Settings) *string { return &s.HalfSizeTier }}
	sidecarChoice = &Choice{Name: "sidecar", What: "sidecar mode", Values: "off|meta|geometry|basic", Default: "meta", Zero: "meta",
		Help:  "XMP sidecars (IMG.xmp, IMG.EXT.xmp, over a DNG's own XMP; read, never written): meta (rating, label, pick flag, keywords, title, description, creator and rights: filters and the outputs' metadata), geometry (also tiff:Orientation and Camera Raw's crop and angle), basic (also crs:Exposure2012 and crs:Temperature/Tint white balance) or off (sidecars ignored); a change the mode reads converts again",
		field: func(s *Settings) *string { return &s.Sidecar }}
	subsamplingChoice = &Choice{Name: "jpeg-subsampling", Values: JPEGSubsamplingNames, Default: "auto", Zero: "auto",
		Help:  "chroma subsampling of JPEG outputs: 444 (full colour resolution), 422 (half across), 420 (half both ways), or auto: 444 at quality 90 and above, 420 below; also the default of JPEG variants",
		field: func(s *Settings) *string { return &s.JPEGSubsampling }, parse: ParseJPEGSubsampling}
)

// Choices is the table of the settings that name one of a few values, in
// the order Validate checks them.
var Choices = []*Choice{demosaicChoice, whiteLevelChoice, highlightsChoice, cropChoice, opcodesChoice,
	anchorChoice, lookChoice, lensChoice, subsamplingChoice, halfTierChoice, sidecarChoice}

// List returns the accepted values, for completion and help.
func (c *Choice) List() []string { return strings.Split(c.Values, "|") }

// Parse returns the value of s as Settings stores it: one of Values, in
// any case (JPEG subsampling: auto as ""). The error is `unknown WHAT "s"
// (want a, b or c)`.
func (c *Choice) Parse(s string) (string, error) {
	if c.parse != nil {
		return c.parse(s)
	}
	return parseChoice[string](c.What, c.Values, s)
}

// Set parses v (Parse) into c's field of s. The error names the setting
// as a flag: `--look: unknown look "x" (want ...)`.
func (c *Choice) Set(s *Settings, v string) error {
	val, err := c.Parse(v)
	switch {
	case err != nil && c.parse != nil:
		return fmt.Errorf("--%s %w", c.Name, err)
	case err != nil:
		return fmt.Errorf("--%s: %w", c.Name, err)
	}
	*c.field(s) = val
	return nil
}

// value is c's field of s, the zero value read as Zero.
func (c *Choice) value(s Settings) string {
	if v := *c.field(&s); v != "" {
		return v
	}
	return c.Zero
}

// hashPart is c's part of DevelopHash: "HashKey=value".
func (c *Choice) hashPart(s Settings) string { return c.HashKey + "=" + c.value(s) }

// validate reports a value of c's field of s that the develop does not
// know: one that Parse refuses, or stores otherwise (in upper case), or
// the zero value of a setting without a Zero.
func (c *Choice) validate(s Settings) error {
	v := *c.field(&s)
	if v == "" && c.Zero != "" {
		return nil
	}
	got, err := c.Parse(v)
	switch {
	case err != nil && c.parse != nil:
		return fmt.Errorf("%s %w", strings.ReplaceAll(c.Name, "-", " "), err)
	case err != nil:
		return err
	case got != v && c.parse == nil:
		return fmt.Errorf("unknown %s %q (want %s)", c.What, v, wantList(c.Values))
	}
	return nil
}

// parseAs is c.Parse typed as T, for the typed parsers below.
func parseAs[T ~string](c *Choice, s string) (T, error) {
	v, err := c.Parse(s)
	return T(v), err
}

// Demosaic names a demosaic algorithm: rawbatch's own "rcd"
// (pipeline/demosaic, Bayer files) or one of LibRaw's (demosaics).
type Demosaic string

// DemosaicNames lists the accepted --demosaic values.
const DemosaicNames = "linear|vng|ppg|ahd|dcb|dht|aahd|rcd"

// ParseDemosaic accepts one of DemosaicNames, case-insensitively.
func ParseDemosaic(s string) (Demosaic, error) { return parseAs[Demosaic](demosaicChoice, s) }

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

// ParseWhiteLevel accepts data or libraw, case-insensitively.
func ParseWhiteLevel(s string) (WhiteLevelMode, error) {
	return parseAs[WhiteLevelMode](whiteLevelChoice, s)
}

// whiteLevel is s.WhiteLevel, "" meaning the default (data).
func (s Settings) whiteLevel() WhiteLevelMode { return WhiteLevelMode(whiteLevelChoice.value(s)) }

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
	return parseAs[HighlightMode](highlightsChoice, s)
}

// highlights is s.Highlights, "" meaning the default (reconstruct).
func (s Settings) highlights() HighlightMode { return HighlightMode(highlightsChoice.value(s)) }

// CropMode is what the output covers (--crop; the rule is crop.go's).
type CropMode string

const (
	// CropCamera: the camera's own picture area (DNG DefaultCrop, Canon
	// SensorInfo borders, LibRaw's inset crop), when the file states one
	// and it is plausible. The default.
	CropCamera CropMode = "camera"
	// CropSensor: LibRaw's visible area (sizes.width×height), as
	// raw-identify's and dcraw_emu's output.
	CropSensor CropMode = "sensor"
)

// crop is s.Crop, "" meaning the default (camera).
func (s Settings) crop() CropMode { return CropMode(cropChoice.value(s)) }

// OpcodeMode switches the DNG opcode stages (--dng-opcodes).
type OpcodeMode string

const (
	// OpcodesOn applies the opcodes of a DNG's OpcodeList1, 2 and 3 that
	// rawbatch implements (GainMap, FixVignetteRadial, WarpRectilinear)
	// and reports the others as not applied. The default.
	OpcodesOn OpcodeMode = "on"
	// OpcodesOff applies none (every opcode is reported as not applied).
	OpcodesOff OpcodeMode = "off"
)

// dngOpcodes is s.DNGOpcodes, "" meaning the default (on).
func (s Settings) dngOpcodes() OpcodeMode { return OpcodeMode(opcodesChoice.value(s)) }

// rawsideParts are the settings of the white-level, highlights, crop and
// DNG opcode stages, for the stage cache key and DevelopHash: all change
// the decoded image (OpcodeList1/2 change the CFA data before the
// demosaic).
func (s Settings) rawsideParts() []string {
	return []string{whiteLevelChoice.hashPart(s), highlightsChoice.hashPart(s), cropChoice.hashPart(s), opcodesChoice.hashPart(s)}
}

// ExposureAnchor chooses whether the exposure is anchored to the embedded
// preview.
type ExposureAnchor string

const (
	// AnchorPreview adds the preview-anchored correction (look.AnchorExposure)
	// when the file's embedded preview is usable and the estimate consistent.
	AnchorPreview ExposureAnchor = "preview"
	// AnchorNone applies --exposure and BaselineExposure only.
	AnchorNone ExposureAnchor = "none"
)

// ParseExposureAnchor accepts preview or none, case-insensitively.
func ParseExposureAnchor(s string) (ExposureAnchor, error) {
	return parseAs[ExposureAnchor](anchorChoice, s)
}

// Look chooses the rendering (docs/look.md).
type Look string

const (
	// LookDefault is the default curve with the preview-anchored exposure
	// (as ExposureAnchor says).
	LookDefault Look = "default"
	// LookCamera fits exposure, curve, white-balance gains and saturation
	// to the embedded preview per file (look.FitCamera), falling back to
	// LookDefault with a note.
	LookCamera Look = "camera"
	// LookNeutral is the default curve with no preview anchoring.
	LookNeutral Look = "neutral"
)

// ParseLook accepts default, camera or neutral, case-insensitively.
func ParseLook(s string) (Look, error) { return parseAs[Look](lookChoice, s) }

// needsPreview reports whether s's look uses the embedded preview: the
// preview-anchored exposure (not with --look neutral) or --look camera,
// both only with a tone curve (with --tone none neither applies).
func (s Settings) needsPreview() bool {
	if s.Tone == ToneNone {
		return false
	}
	return s.Look == LookCamera || s.ExposureAnchor == AnchorPreview && s.Look != LookNeutral
}

// LensMode says whether the lens stage corrects the lens with lensfun
// (docs/lens.md).
type LensMode string

const (
	// LensAuto: look the camera and lens up in lensfun's database and
	// correct vignetting, distortion and transverse chromatic aberration
	// when a profile matches. The default.
	LensAuto LensMode = "auto"
	// LensOff: no lens correction (the stage is not planned).
	LensOff LensMode = "off"
)

// lens is s.Lens, "" meaning the default (auto).
func (s Settings) lens() LensMode { return LensMode(lensChoice.value(s)) }

// JPEGSubsamplingNames lists the values of --jpeg-subsampling, for
// messages and help: auto is the default by quality.
const JPEGSubsamplingNames = "auto|" + encode.JPEGSubsamplingNames

// ParseJPEGSubsampling parses a --jpeg-subsampling (or a variant's
// subsampling=) value, in any case: "444", "422", "420", or "auto" for the
// default by quality, returned as "". An empty value is refused, as
// --demosaic "" is: auto is spelled out.
func ParseJPEGSubsampling(s string) (string, error) {
	v := strings.ToLower(strings.TrimSpace(s))
	if v == "auto" {
		return "", nil
	}
	if v == "" || encode.CheckJPEGSubsampling(v) != nil {
		return "", fmt.Errorf("%q: want auto (444 at quality 90 and above, 420 below), 444, 422 or 420", s)
	}
	return v, nil
}
