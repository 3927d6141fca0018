package pipeline

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/rawbatch/rawbatch/pipeline/encode"
	"github.com/rawbatch/rawbatch/pipeline/internal/libraw"
)

// demosaics maps the demosaic names (demosaicChoice) to LibRaw's user_qual
// codes; "rcd" to AHD, LibRaw's algorithm for the files RCD does not
// demosaic (X-Trans, four colours, ...: the demosaic stage names why).
var demosaics = map[Demosaic]libraw.Demosaic{
	"linear": libraw.Linear, "vng": libraw.VNG, "ppg": libraw.PPG, "ahd": libraw.AHD,
	"dcb": libraw.DCB, "dht": libraw.DHT, "aahd": libraw.AAHD, "rcd": libraw.AHD,
}

// WhiteBalance chooses the white-balance multipliers.
type WhiteBalance struct {
	// Mode is "camera" (as shot; LibRaw falls back to daylight when the
	// file has none), "auto" (grey world over the image, by LibRaw),
	// "daylight" (LibRaw's multipliers derived from the camera matrix) or
	// "custom".
	Mode string
	// Multipliers R, G, B for Mode "custom" (dimensionless, > 0; only
	// their ratios matter).
	Multipliers [3]float64
}

func (w WhiteBalance) String() string {
	if w.Mode == "custom" {
		return fmt.Sprintf("%g,%g,%g", w.Multipliers[0], w.Multipliers[1], w.Multipliers[2])
	}
	return w.Mode
}

// ParseWhiteBalance accepts camera, auto, daylight or "R,G,B" multipliers.
func ParseWhiteBalance(s string) (WhiteBalance, error) {
	switch strings.ToLower(s) {
	case "camera", "auto", "daylight":
		return WhiteBalance{Mode: strings.ToLower(s)}, nil
	}
	parts := strings.Split(s, ",")
	if len(parts) != 3 {
		return WhiteBalance{}, fmt.Errorf("white balance %q: want camera, auto, daylight or R,G,B multipliers", s)
	}
	var w WhiteBalance
	w.Mode = "custom"
	for i, p := range parts {
		v, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || !(v > 0) || v > 1e6 {
			return WhiteBalance{}, fmt.Errorf("white balance %q: multiplier %q must be a number above 0 and at most 1000000", s, p)
		}
		w.Multipliers[i] = v
	}
	return w, nil
}

// Format is an output file format.
type Format string

const (
	// JPEG: 8-bit baseline JPEG, sRGB ICC profile and EXIF embedded.
	JPEG Format = "jpeg"
	// PNG16: 16-bit RGB PNG, lossless, sRGB ICC profile and EXIF embedded.
	PNG16 Format = "png16"
)

// ParseFormat accepts every variant format (FormatNames: jpeg or jpg,
// tiff8, tiff16, webp, png8, png16, avif, jxl, uhdr), case-insensitively.
func ParseFormat(s string) (Format, error) {
	f := strings.ToLower(s)
	if f == "jpg" {
		f = "jpeg"
	}
	if _, ok := variantFormats[f]; ok {
		return Format(f), nil
	}
	return "", fmt.Errorf("unknown format %q (want %s)", s, FormatNames)
}

// Ext returns the output file extension with its dot (".jpg" for an
// unknown format).
func (f Format) Ext() string {
	if ext, ok := variantFormats[string(f)]; ok {
		return ext
	}
	return ".jpg"
}

// Settings are the rendering settings of one conversion. The zero value is
// not valid; start from DefaultSettings.
type Settings struct {
	Demosaic     Demosaic
	WhiteBalance WhiteBalance
	// Exposure is added exposure in EV (linear gain 2^Exposure).
	Exposure float64
	// BaselineExposure adds the DNG BaselineExposure tag (EV) to Exposure.
	BaselineExposure bool
	Tone             ToneCurve
	Format           Format
	// Quality is the JPEG quality, 1..100.
	Quality int
	// JPEGSubsampling is the chroma subsampling of JPEG outputs that give
	// none (--jpeg-subsampling): "444", "422" or "420", or "" for the
	// default by quality (encode.JPEGSubsamplingFor).
	JPEGSubsampling string
	// Highlight is LibRaw's highlight mode; it must be 0 (clip): the
	// highlights stage does the rest (Highlights). Kept for the API.
	Highlight int
	// WhiteLevel is where the raw white level comes from (--white-level:
	// data or libraw; "" is data).
	WhiteLevel WhiteLevelMode
	// Highlights is the highlight mode (--highlights: clip or
	// reconstruct; "" is reconstruct).
	Highlights HighlightMode
	// HalfSize decodes at half width and height, one output pixel per 2×2
	// CFA block, without demosaicing (LibRaw half_size): a quarter of the
	// pixels and of most of the memory.
	HalfSize bool
	// HalfSizeTier is "auto" to decode at half size (as HalfSize) a file
	// whose variants are all at most half the picture (halfSizeTier,
	// decodedsize.go), or "off" ("" is off; --half-size-tier).
	HalfSizeTier string
	// Crop is what the output covers (--crop: camera, the camera's
	// picture area, or sensor, LibRaw's visible area; "" is camera).
	Crop CropMode

	// Sidecar is "meta" to read the raw's XMP sidecar (pipeline/sidecar)
	// for the outputs' metadata, "geometry" also for its orientation and
	// crop, "basic" also for its exposure and white balance (the runner
	// puts those in Edit), or "off" to ignore sidecars ("" is meta;
	// --sidecar). A file's packet inside it (tag 700) is read either way.
	Sidecar string
	// Edit is the file's own edit from its XMP (--sidecar geometry,
	// basic), set per file by the runner over the run's settings; the
	// zero value for a run's settings.
	Edit Edit `json:",omitempty"`

	// StripMetadata keeps in outputs only what colour management needs:
	// the ICC profile and EXIF Orientation = 1, plus Software = rawbatch
	// (how rawbatch knows its own outputs); no other EXIF, no GPS, no XMP
	// (docs/metadata.md). Artist and Copyright are still written when set.
	StripMetadata bool
	// Artist and Copyright, when not "", are written as the EXIF Artist
	// (IFD0 315) and Copyright (33432) of every output, in place of the
	// raw's (free text, UTF-8; cut at a NUL).
	Artist, Copyright string
	// ExposureAnchor adds the preview-anchored exposure correction
	// (AnchorPreview); "" or AnchorNone: none.
	ExposureAnchor ExposureAnchor
	// Look is the rendering (LookDefault, LookCamera, LookNeutral; "" is
	// LookDefault).
	Look Look
	// DNGOpcodes applies a DNG's opcode lists (OpcodesOn, OpcodesOff; ""
	// is OpcodesOn; docs/opcodes.md).
	DNGOpcodes OpcodeMode
	// Denoise is the noise reduction (--denoise: DenoiseAuto, DenoiseOff
	// or a strength, ParseDenoise; "" is auto) and CaptureSharpen the
	// capture sharpening (--capture-sharpen: auto, off or an amount,
	// ParseCaptureSharpen; "" is auto): docs/denoise.md.
	Denoise, CaptureSharpen string
	// Lens is the lens correction (--lens: LensAuto or LensOff; "" is
	// LensAuto); LensDB a directory of extra lensfun XML files (--lens-db,
	// "" none); LensModel the lens name looked up instead of the file's
	// (--lens-model, "" the file's). docs/lens.md.
	Lens      LensMode
	LensDB    string
	LensModel string

	// Variants are the files written per input; empty means one "main"
	// variant from Format and Quality (full size, sRGB).
	Variants []Variant
}

// OutputVariants returns the variants to write, each Normal (so the
// per-output settings hash of the up-to-date records is the same for
// equivalent specs): Variants, or the main variant that Format and Quality
// describe.
func (s Settings) OutputVariants() []Variant {
	if len(s.Variants) > 0 {
		out := make([]Variant, len(s.Variants))
		for i, v := range s.Variants {
			out[i] = v.Normal()
		}
		return out
	}
	f := "jpeg"
	if _, ok := variantFormats[string(s.Format)]; ok {
		f = string(s.Format)
	}
	v := Variant{Name: "main", Format: f, Quality: s.Quality, Space: "srgb"}
	if f == "jpeg" || f == "uhdr" {
		v.Subsampling = s.JPEGSubsampling
	}
	return []Variant{v.Normal()}
}

// DefaultSettings returns the settings of `rawbatch convert` without
// flags: each Choice's Default, and the defaults of the other settings.
func DefaultSettings() Settings {
	s := Settings{
		WhiteBalance:     WhiteBalance{Mode: "camera"},
		BaselineExposure: true,
		Tone:             ToneDefault,
		Format:           JPEG,
		Quality:          DefaultQuality,
		Denoise:          DenoiseAuto,
		CaptureSharpen:   CaptureSharpenAuto,
	}
	for _, c := range Choices {
		v, err := c.Parse(c.Default)
		if err != nil {
			panic("pipeline: the default of " + c.Name + ": " + err.Error())
		}
		*c.field(&s) = v
	}
	return s
}

// Validate reports the first invalid field.
func (s Settings) Validate() error {
	for _, c := range Choices {
		if err := c.validate(s); err != nil {
			return err
		}
	}
	switch s.WhiteBalance.Mode {
	case "camera", "auto", "daylight", "custom":
	default:
		return fmt.Errorf("unknown white balance mode %q", s.WhiteBalance.Mode)
	}
	if _, err := ParseToneCurve(string(s.Tone)); err != nil {
		return err
	}
	if _, err := ParseFormat(string(s.Format)); err != nil {
		return err
	}
	if err := CheckQuality(s.Quality); err != nil {
		return fmt.Errorf("quality %w", err)
	}
	if err := CheckExposure(s.Exposure); err != nil {
		return fmt.Errorf("exposure %w", err)
	}
	if s.Highlight != 0 {
		// The highlights stage needs LibRaw to clip (mode 0) and does
		// the rest itself.
		return fmt.Errorf("LibRaw highlight mode %d: no longer used; LibRaw clips (mode 0) and Highlights (%s) does the rest", s.Highlight, HighlightNames)
	}
	if err := s.validateDetail(); err != nil {
		return err
	}
	if err := s.validateLensDB(); err != nil {
		return err
	}
	return CheckVariants(s.OutputVariants())
}

// CheckQuality returns an error when q, a JPEG quality, is outside
// 1..100: "0 out of range 1..100", for the caller to prefix with the
// setting's name (Validate: "quality 0 ...", the command line: "--quality 0 ...").
func CheckQuality(q int) error {
	if q < 1 || q > 100 {
		return fmt.Errorf("%d out of range 1..100", q)
	}
	return nil
}

// CheckExposure returns an error when ev, an exposure change in EV, is
// outside -20..20 or NaN: "NaN EV out of range -20..20", for the caller to
// prefix with the setting's name as CheckQuality's.
func CheckExposure(ev float64) error {
	if !(ev >= -20 && ev <= 20) { // also rejects NaN
		return fmt.Errorf("%g EV out of range -20..20", ev)
	}
	return nil
}

// librawParams returns the LibRaw processing parameters for s.
func (s Settings) librawParams() libraw.Params {
	p := libraw.Params{Demosaic: demosaics[s.Demosaic], Highlight: s.Highlight, HalfSize: s.HalfSize}
	switch s.WhiteBalance.Mode {
	case "camera":
		p.WB = libraw.WBCamera
	case "auto":
		p.WB = libraw.WBAuto
	case "daylight":
		p.WB = libraw.WBDaylight
	case "custom":
		p.WB = libraw.WBUser
		m := s.WhiteBalance.Multipliers
		p.Multipliers = [4]float32{float32(m[0]), float32(m[1]), float32(m[2]), float32(m[1])}
	}
	return p
}

// LibRaw describes the LibRaw library linked at run time.
type LibRaw struct {
	// Version is libraw_version(), e.g. "0.20.2-Release"; Short is
	// "0.20.2".
	Version, Short string
	// Path is the shared object's file name; ThreadSafe reports whether
	// it is the thread-safe build libraw_r.
	Path       string
	ThreadSafe bool
	// Bundled reports whether it is rawbatch's bundled LibRaw, linked
	// statically (Path is then the executable), rather than the system's.
	Bundled bool
}

// LibRawInfo reads the linked LibRaw's version at run time.
func LibRawInfo() LibRaw {
	return LibRaw{Version: libraw.Version(), Short: libraw.ShortVersion(), Path: libraw.LibraryPath(), ThreadSafe: libraw.ThreadSafe(), Bundled: libraw.Bundled()}
}

// JPEGLibrary describes the libjpeg that writes JPEG outputs, as linked at
// run time (encode.JPEGLibrary: "libjpeg-turbo version 2.1.5 (build
// 20230203), API 62 (/lib/x86_64-linux-gnu/libjpeg.so.62)").
func JPEGLibrary() string { return encode.JPEGLibrary() }
