package pipeline

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/rawbatch/rawbatch/pipeline/colour"
	"github.com/rawbatch/rawbatch/pipeline/encode"
)

// A Variant is one rendition written for each input: its format, size,
// quality, colour space and sharpening.
type Variant struct {
	// Name is "main" for the file named STEM.EXT; any other name gives
	// STEM.NAME.EXT. 1..MaxVariantName letters, digits, '-' and '_'.
	Name string
	// Format is jpeg, tiff8, tiff16, webp, png8, png16, avif, jxl or
	// uhdr (FormatNames).
	Format string
	// Size is the long edge in pixels; 0 keeps the full size. At most one
	// of Size, Width/Height and Percent is set (see Fit).
	Size int
	// Width and Height are a box in pixels to fit inside (size=WxH; a side
	// of 0, as in size=Wx or size=xH, is unbounded).
	Width, Height int
	// Percent scales both sides (size=50%), 0 < Percent ≤ 1000.
	Percent float64
	// Upscale lets Size, Width/Height or Percent enlarge the image; without
	// it an image already within the size is written at its full size.
	Upscale bool
	// Quality is the JPEG, WebP, AVIF or lossy JPEG XL quality, 1..100
	// (0: DefaultQuality). Lossless formats ignore it.
	Quality int
	// Subsampling is a JPEG or AVIF variant's chroma subsampling: "444",
	// "422" or "420" ("": for JPEG encode.JPEGSubsamplingFor(Quality), 444
	// at quality 90 and above, 420 below; for AVIF 444; Normal fills it
	// in). Other formats have none.
	Subsampling string
	// Space is the output colour space: srgb, displayp3, adobergb,
	// prophoto or rec2020.
	Space string
	// Sharpen is the unsharp-mask amount (0: none).
	Sharpen float64
	// Compress is a TIFF variant's compression: "" (none; "none" is
	// normalised to ""), "deflate" or "lzw" (encode.TIFFOptions).
	Compress string
	// Predictor is the TIFF predictor used with Compress: "horizontal"
	// (TIFF 6.0 §14 horizontal differencing, the default) or "none"; ""
	// when Compress is "".
	Predictor string
	// Source is what the variant is made from: SourceRaw ("", source=raw:
	// the raw data), SourcePreview (the embedded preview; the file fails
	// when it is missing, a thumbnail or smaller than the variant) or
	// SourceAuto (the preview when it qualifies, else the raw data).
	Source string
	// Depth is an AVIF variant's bits per sample (8, 10 or 12) or a JPEG
	// XL variant's (8 or 16); 0 for the default (8, or with HDR 10 for
	// AVIF and 16 for JPEG XL; Normal fills it in). Other formats have
	// none (their format names the depth).
	Depth int
	// Speed is an AVIF variant's libavif speed, 0 (slowest, smallest) ..
	// 10; 0 is the default, which Normal fills in (encode.AVIFDefaultSpeed),
	// and a spec's speed=0 is stored as speedZero (-1).
	Speed int
	// Effort is a JPEG XL variant's libjxl effort, 1..9 (0:
	// encode.JXLDefaultEffort).
	Effort int
	// Lossless makes a JPEG XL variant lossless (Quality is then 0).
	Lossless bool
	// HDR is an AVIF or JPEG XL variant's HDR transfer function:
	// "" (SDR), encode.HDRPQ or encode.HDRHLG. An HDR variant's space is
	// rec2020 (BT.2100 primaries) and it carries CICP, no ICC profile.
	HDR string
	// Headroom is an Ultra HDR variant's largest content boost, in stops
	// (EV) above SDR white: the gain map takes no pixel above SDR white
	// times 2^Headroom. 0: from the image's own highlights
	// (UHDRAutoHeadroom, at most UHDRMaxAutoHeadroom).
	Headroom float64
	// GainMapScale is an Ultra HDR variant's gain map downscaling: the
	// map has ceil(W/s)×ceil(H/s) pixels (0: UHDRDefaultGainMapScale).
	GainMapScale int
	// GainMapQuality is the JPEG quality of an Ultra HDR variant's gain
	// map, 1..100 (0: UHDRDefaultGainMapQuality).
	GainMapQuality int
}

// Ultra HDR variant defaults.
const (
	// UHDRDefaultGainMapScale: a gain map of a quarter of the width and
	// height, as Android's camera writes and libultrahdr's default.
	UHDRDefaultGainMapScale = 4
	// UHDRDefaultGainMapQuality is the gain map JPEG's default quality,
	// libultrahdr's: at 85 the ringing at a highlight's edge took 2 % off
	// the HDR luminance inside it.
	UHDRDefaultGainMapQuality = 95
	// UHDRMaxAutoHeadroom caps the headroom taken from the image, in
	// stops: 8× SDR white, 1624 nits at BT.2408's 203-nit reference
	// white, about what bright HDR phone and laptop displays reach.
	UHDRMaxAutoHeadroom = 3.0
	// UHDRMaxHeadroom is the largest headroom= accepted, in stops.
	UHDRMaxHeadroom = 6.0
)

// DefaultQuality is the quality of a lossy variant that gives none.
const DefaultQuality = 90

// MaxVariantName is the longest variant name, in bytes.
const MaxVariantName = 32

// variantFormats maps a variant format to its file extension.
var variantFormats = map[string]string{
	"jpeg": ".jpg", "tiff8": ".tif", "tiff16": ".tif", "webp": ".webp", "png8": ".png", "png16": ".png",
	"avif": ".avif", "jxl": ".jxl", "uhdr": ".jpg",
}

// FormatNames lists the output formats, for messages and help.
const FormatNames = "jpeg, tiff8, tiff16, webp, png8, png16, avif, jxl, uhdr"

// tiffFormats are the variant formats that take compress= and predictor=.
var tiffFormats = map[string]bool{"tiff8": true, "tiff16": true}

// lossyFormats are the variant formats that use Quality.
// (A lossless JPEG XL variant has none: Variant.lossy.)
var lossyFormats = map[string]bool{"jpeg": true, "webp": true, "avif": true, "jxl": true, "uhdr": true}

// lossy reports whether v uses Quality.
func (v Variant) lossy() bool { return lossyFormats[v.Format] && !(v.Format == "jxl" && v.Lossless) }

// wholeFrameFormats are the variant formats whose encoder takes the whole
// image at once (libavif, libjxl): never streamed, their buffers counted
// in the estimate (encoderCost), and their depth, speed, effort, lossless
// and hdr options; wholeFrame adds Ultra HDR.
var wholeFrameFormats = map[string]bool{"avif": true, "jxl": true}

// wholeFrame reports whether format's encoder takes the whole image:
// AVIF, JPEG XL, and Ultra HDR (its gain map needs the whole base, and
// its MPF index the encoded primary image's size).
func wholeFrame(format string) bool { return wholeFrameFormats[format] || format == "uhdr" }

// hdrRendition reports whether v has a tone rendition of its own, not the
// SDR one the other variants share: an HDR AVIF or JPEG XL (hdrToneRow),
// or Ultra HDR (its scene-referred image, from which its quantiser makes
// both the SDR base and the HDR rendition the gain map reaches).
func (v Variant) hdrRendition() bool { return v.HDR != "" || v.Format == "uhdr" }

// variantSpaces maps a --variant space name to its colour space.
var variantSpaces = map[string]*colour.Space{
	"srgb": colour.SRGB, "displayp3": colour.DisplayP3, "adobergb": colour.AdobeRGB,
	"prophoto": colour.ProPhoto, "rec2020": colour.Rec2020,
}

// VariantSyntax is the syntax of a variant spec (--variant, variants:).
const VariantSyntax = "NAME=FORMAT[,size=PX|WxH|Wx|xH|P%][,upscale=true][,quality=Q][,subsampling=auto|444|422|420][,space=SPACE][,sharpen=AMOUNT][,compress=none|deflate|lzw][,predictor=horizontal|none][,depth=8|10|12|16][,speed=0..10][,effort=1..9][,lossless=true][,hdr=pq|hlg][,headroom=EV|auto][,gainmap-scale=1..16][,gainmap-quality=Q][,source=raw|preview|auto]"

// ParseVariant parses NAME=FORMAT[,size=PX][,quality=Q][,space=SPACE]
// [,sharpen=AMOUNT], the syntax of --variant. A lossy variant that gives no
// quality gets DefaultQuality. The result is Normal.
func ParseVariant(s string) (Variant, error) {
	return ParseVariantQuality(s, 0)
}

// ParseVariantQuality is ParseVariant with quality (1..100; 0 for
// DefaultQuality) as the quality of a lossy variant that gives none.
func ParseVariantQuality(s string, quality int) (Variant, error) {
	return ParseVariantDefaults(s, VariantDefaults{Quality: quality})
}

// VariantDefaults are the values of the options a variant spec leaves
// out, from the command's own settings (--quality, --jpeg-subsampling).
type VariantDefaults struct {
	// Quality of a lossy variant, 1..100; 0 for DefaultQuality.
	Quality int
	// Subsampling of a JPEG variant ("444", "422", "420"); "" for the
	// default by its quality.
	Subsampling string
}

// ParseVariantDefaults is ParseVariant with d as the values of the
// options the spec leaves out.
func ParseVariantDefaults(s string, d VariantDefaults) (Variant, error) {
	quality := d.Quality
	name, rest, ok := strings.Cut(s, "=")
	if !ok || name == "" || rest == "" {
		return Variant{}, fmt.Errorf("variant %q: want %s", s, VariantSyntax)
	}
	parts := strings.Split(rest, ",")
	format := strings.ToLower(strings.TrimSpace(parts[0]))
	if format == "jpg" { // as --format accepts
		format = "jpeg"
	}
	v := Variant{Name: strings.TrimSpace(name), Format: format, Space: "srgb", Quality: quality}
	if format == "jpeg" || format == "uhdr" {
		v.Subsampling = d.Subsampling
	}
	seen := map[string]bool{}
	for _, p := range parts[1:] {
		k, val, ok := strings.Cut(p, "=")
		if !ok {
			return Variant{}, fmt.Errorf("variant %q: %q is not KEY=VALUE", s, p)
		}
		// "thumb=webp, size=512" as written in a YAML list or by hand.
		k, val = strings.TrimSpace(k), strings.TrimSpace(val)
		key := strings.ToLower(k)
		if seen[key] {
			return Variant{}, fmt.Errorf("variant %q: %s given twice: give each key once", s, key)
		}
		seen[key] = true
		var err error
		switch key {
		case "size":
			if err := v.parseSize(s, val); err != nil {
				return Variant{}, err
			}
		case "upscale":
			if v.Upscale, err = strconv.ParseBool(val); err != nil {
				return Variant{}, fmt.Errorf("variant %q: upscale=%s: want true or false", s, val)
			}
		case "quality":
			if v.Quality, err = strconv.Atoi(val); err == nil && (v.Quality < 1 || v.Quality > 100) {
				return Variant{}, fmt.Errorf("variant %q: quality=%s out of range 1..100 (leave quality out for the default, %d)", s, val, DefaultQuality)
			}
		case "subsampling":
			if v.Format != "jpeg" && v.Format != "avif" && v.Format != "uhdr" {
				return Variant{}, fmt.Errorf("variant %q: subsampling= is for jpeg, uhdr and avif, not %s", s, v.Format)
			}
			// auto: by the variant's own quality, whatever
			// --jpeg-subsampling says.
			if v.Subsampling, err = ParseJPEGSubsampling(val); err != nil {
				return Variant{}, fmt.Errorf("variant %q: subsampling=%w", s, err)
			}
		case "space":
			v.Space = strings.ToLower(val)
		case "sharpen":
			v.Sharpen, err = strconv.ParseFloat(val, 64)
		case "compress":
			v.Compress = strings.ToLower(val)
		case "predictor":
			v.Predictor = strings.ToLower(val)
		case "depth":
			v.Depth, err = strconv.Atoi(val)
		case "speed":
			if v.Speed, err = strconv.Atoi(val); err == nil && v.Speed == 0 {
				v.Speed = speedZero
			}
		case "effort":
			v.Effort, err = strconv.Atoi(val)
		case "lossless":
			if v.Lossless, err = strconv.ParseBool(val); err != nil {
				return Variant{}, fmt.Errorf("variant %q: lossless=%s: want true or false", s, val)
			}
		case "hdr":
			v.HDR = strings.ToLower(val)
			if v.HDR == "none" || v.HDR == "sdr" {
				v.HDR = ""
			}
		case "headroom":
			if strings.EqualFold(val, "auto") {
				v.Headroom = 0
			} else if v.Headroom, err = strconv.ParseFloat(val, 64); err == nil && !(v.Headroom > 0 && v.Headroom <= UHDRMaxHeadroom) {
				return Variant{}, fmt.Errorf("variant %q: headroom=%s: want auto or stops above SDR white, more than 0 and at most %g", s, val, UHDRMaxHeadroom)
			}
		case "gainmap-scale":
			if v.GainMapScale, err = strconv.Atoi(val); err == nil && (v.GainMapScale < 1 || v.GainMapScale > 16) {
				return Variant{}, fmt.Errorf("variant %q: gainmap-scale=%s out of range 1..16", s, val)
			}
		case "gainmap-quality":
			if v.GainMapQuality, err = strconv.Atoi(val); err == nil && (v.GainMapQuality < 1 || v.GainMapQuality > 100) {
				return Variant{}, fmt.Errorf("variant %q: gainmap-quality=%s out of range 1..100", s, val)
			}
		case "source":
			v.Source = strings.ToLower(val)
		default:
			return Variant{}, fmt.Errorf("variant %q: unknown key %q (size, upscale, quality, subsampling, space, sharpen, compress, predictor, depth, speed, effort, lossless, hdr, headroom, gainmap-scale, gainmap-quality, source)", s, k)
		}
		if err != nil {
			return Variant{}, fmt.Errorf("variant %q: %s=%q is not a number", s, k, val)
		}
	}
	if v.HDR != "" && seen["space"] && v.Space != "rec2020" {
		return Variant{}, fmt.Errorf("variant %q: hdr=%s is in rec2020 (BT.2100 primaries), not space=%s", s, v.HDR, v.Space)
	}
	if err := v.Validate(); err != nil {
		return Variant{}, err
	}
	return v.Normal(), nil
}

// speedZero stands for speed=0 given in a spec until Normal, which
// otherwise reads a Speed of 0 as "the default".
const speedZero = -1

// validateWholeFrame reports an AVIF or JPEG XL option that v's format
// does not take or whose value is out of range.
func (v Variant) validateWholeFrame() error {
	if !wholeFrameFormats[v.Format] {
		if v.Depth != 0 || v.Speed != 0 || v.Effort != 0 || v.Lossless || v.HDR != "" {
			return fmt.Errorf("variant %s: depth=, speed=, effort=, lossless= and hdr= are for avif and jxl, not %s", v.Name, v.Format)
		}
		return nil
	}
	switch v.HDR {
	case "", encode.HDRPQ, encode.HDRHLG:
	default:
		return fmt.Errorf("variant %s: unknown hdr %q (pq, hlg)", v.Name, v.HDR)
	}
	if v.Format == "avif" {
		if v.Effort != 0 || v.Lossless {
			return fmt.Errorf("variant %s: effort= and lossless= are for jxl, not avif", v.Name)
		}
		switch v.Depth {
		case 0, 10, 12:
		case 8:
			if v.HDR != "" {
				return fmt.Errorf("variant %s: hdr=%s needs depth=10 or 12", v.Name, v.HDR)
			}
		default:
			return fmt.Errorf("variant %s: depth %d: avif takes 8, 10 or 12", v.Name, v.Depth)
		}
		if v.Speed < speedZero || v.Speed > 10 {
			return fmt.Errorf("variant %s: speed %d out of range 0..10", v.Name, v.Speed)
		}
		return nil
	}
	if v.Speed != 0 {
		return fmt.Errorf("variant %s: speed= is for avif, not jxl (effort=)", v.Name)
	}
	switch v.Depth {
	case 0, 16:
	case 8:
		if v.HDR != "" {
			return fmt.Errorf("variant %s: hdr=%s needs depth=16", v.Name, v.HDR)
		}
	default:
		return fmt.Errorf("variant %s: depth %d: jxl takes 8 or 16", v.Name, v.Depth)
	}
	if v.Effort < 0 || v.Effort > 9 {
		return fmt.Errorf("variant %s: effort %d out of range 1..9", v.Name, v.Effort)
	}
	return nil
}

// validateUHDR reports an Ultra HDR option on another format, or one out
// of range.
func (v Variant) validateUHDR() error {
	if v.Format != "uhdr" {
		if v.Headroom != 0 || v.GainMapScale != 0 || v.GainMapQuality != 0 {
			return fmt.Errorf("variant %s: headroom=, gainmap-scale= and gainmap-quality= are for uhdr, not %s", v.Name, v.Format)
		}
		return nil
	}
	if !(v.Headroom >= 0 && v.Headroom <= UHDRMaxHeadroom) {
		return fmt.Errorf("variant %s: headroom %g out of range (0 for auto, at most %g stops)", v.Name, v.Headroom, UHDRMaxHeadroom)
	}
	if v.GainMapScale < 0 || v.GainMapScale > 16 {
		return fmt.Errorf("variant %s: gainmap-scale %d out of range 1..16", v.Name, v.GainMapScale)
	}
	if v.GainMapQuality < 0 || v.GainMapQuality > 100 {
		return fmt.Errorf("variant %s: gainmap-quality %d out of range 1..100", v.Name, v.GainMapQuality)
	}
	if v.Sharpen != 0 {
		// The base and the HDR rendition are made pixel by pixel from
		// one scene-referred image at quantise; a sharpened base would
		// need a second image.
		return fmt.Errorf("variant %s: sharpen= is not available for uhdr", v.Name)
	}
	if v.Source == SourcePreview {
		return fmt.Errorf("variant %s: uhdr needs the raw data (source=preview: an embedded preview is an SDR picture)", v.Name)
	}
	return nil
}

// UHDROptions returns the encoder options of an Ultra HDR variant
// (Normal); the gain map's metadata is the caller's.
func (v Variant) UHDROptions() encode.UHDROptions {
	return encode.UHDROptions{Quality: v.Quality, Subsampling: v.Subsampling, GainMapQuality: v.GainMapQuality}
}

// cicp returns the CICP colour primaries and transfer characteristics
// (ITU-T H.273) of an SDR variant's space: unspecified (the ICC profile
// alone says) for Adobe RGB and ProPhoto, which H.273 has no code for.
func (v Variant) cicp() (primaries, transfer int) {
	switch v.Space {
	case "srgb":
		return encode.CICPPrimariesBT709, encode.CICPTransferSRGB
	case "displayp3":
		return encode.CICPPrimariesP3D65, encode.CICPTransferSRGB
	case "rec2020":
		return encode.CICPPrimariesBT2020, encode.CICPTransferBT709
	}
	return encode.AVIFUnspecified, encode.AVIFUnspecified
}

// AVIFOptions returns the encoder options of an AVIF variant (Normal);
// the HDR content light level is the caller's.
func (v Variant) AVIFOptions() encode.AVIFOptions {
	o := encode.AVIFOptions{Depth: v.Depth, Quality: v.Quality, Speed: v.Speed, Subsampling: v.Subsampling, HDR: encode.HDR{Transfer: v.HDR}}
	if o.Speed == speedZero {
		o.Speed = 0
	}
	o.Primaries, o.Transfer = v.cicp()
	return o
}

// JXLOptions returns the encoder options of a JPEG XL variant (Normal);
// the HDR content light level is the caller's.
func (v Variant) JXLOptions() encode.JXLOptions {
	return encode.JXLOptions{Bits: v.Depth, Lossless: v.Lossless, Quality: v.Quality, Effort: v.Effort, HDR: encode.HDR{Transfer: v.HDR}}
}

// quant16 reports whether v's quantised image has 16-bit samples: TIFF16,
// PNG16, AVIF above 8 bits, 16-bit JPEG XL.
func (v Variant) quant16() bool {
	return bits16(v.Format) || wholeFrameFormats[v.Format] && v.Normal().Depth > 8
}

// validateTIFF reports a compress= or predictor= that v's format does not
// take or that is unknown.
func (v Variant) validateTIFF() error {
	if v.Compress == "" && v.Predictor == "" {
		return nil
	}
	if !tiffFormats[v.Format] {
		return fmt.Errorf("variant %s: compress= and predictor= are for tiff8 and tiff16, not %s", v.Name, v.Format)
	}
	switch v.Compress {
	case "", "none", encode.TIFFDeflate, encode.TIFFLZW:
	default:
		return fmt.Errorf("variant %s: unknown compression %q (none, deflate, lzw)", v.Name, v.Compress)
	}
	switch v.Predictor {
	case "", "horizontal", "none":
	default:
		return fmt.Errorf("variant %s: unknown predictor %q (horizontal, none)", v.Name, v.Predictor)
	}
	if v.Predictor != "" && (v.Compress == "" || v.Compress == "none") {
		return fmt.Errorf("variant %s: predictor= only applies with compress=deflate or compress=lzw", v.Name)
	}
	return nil
}

// TIFFOptions returns the encoder options of a TIFF variant (Normal).
func (v Variant) TIFFOptions() encode.TIFFOptions {
	return encode.TIFFOptions{Compression: v.Compress, Predictor: v.Compress != "" && v.Predictor != "none"}
}

// Normal returns v in its canonical form, so that variants that write the
// same file compare (and hash) equal: a lossy format's quality 0 becomes
// DefaultQuality, a lossless format's quality 0 (it has none), a JPEG's
// subsampling "" the default for its quality (other formats' ""), a size
// below 1 is 0 (full size), a square box is a long edge, 100 % (and more
// without Upscale) is the full size, a sharpening of -0 is 0, compress=none is no
// compression (and no predictor), and a compressed TIFF's predictor
// defaults to horizontal.
func (v Variant) Normal() Variant {
	switch {
	case !v.lossy():
		v.Quality = 0
	case v.Quality == 0:
		v.Quality = DefaultQuality
	}
	switch {
	case v.Format == "avif" && v.Subsampling == "":
		v.Subsampling = "444"
	case v.Format == "avif":
	case v.Format != "jpeg" && v.Format != "uhdr":
		v.Subsampling = ""
	case v.Subsampling == "":
		v.Subsampling = encode.JPEGSubsamplingFor(v.Quality)
	}
	v = v.normalWholeFrame()
	if v.Format == "uhdr" {
		if v.GainMapScale == 0 {
			v.GainMapScale = UHDRDefaultGainMapScale
		}
		if v.GainMapQuality == 0 {
			v.GainMapQuality = UHDRDefaultGainMapQuality
		}
	}
	if v.Size < 0 {
		v.Size = 0
	}
	v = v.normalSize()
	if v.Sharpen == 0 {
		v.Sharpen = 0 // -0 prints as "-0"
	}
	if v.Compress == "none" {
		v.Compress = ""
	}
	if v.Source == "raw" {
		v.Source = SourceRaw
	}
	switch {
	case v.Compress == "":
		v.Predictor = ""
	case v.Predictor == "":
		v.Predictor = "horizontal"
	}
	return v
}

// normalWholeFrame fills in an AVIF or JPEG XL variant's defaults: depth
// 8 (HDR: 10 for AVIF, 16 for JPEG XL), AVIF speed
// encode.AVIFDefaultSpeed, JPEG XL effort encode.JXLDefaultEffort, and an
// HDR variant's space rec2020.
func (v Variant) normalWholeFrame() Variant {
	switch v.Format {
	case "avif":
		if v.Depth == 0 {
			v.Depth = 8
			if v.HDR != "" {
				v.Depth = 10
			}
		}
		if v.Speed == 0 {
			v.Speed = encode.AVIFDefaultSpeed
		}
	case "jxl":
		if v.Depth == 0 {
			v.Depth = 8
			if v.HDR != "" {
				v.Depth = 16
			}
		}
		if v.Effort == 0 {
			v.Effort = encode.JXLDefaultEffort
		}
	default:
		return v
	}
	if v.HDR != "" {
		v.Space = "rec2020"
	}
	return v
}

// Validate reports the first invalid field of v.
func (v Variant) Validate() error {
	if v.Name == "" || strings.Trim(v.Name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") != "" {
		return fmt.Errorf("variant name %q: use letters, digits, '-' and '_'", v.Name)
	}
	if len(v.Name) > MaxVariantName {
		return fmt.Errorf("variant name %q: %d characters, at most %d (it becomes part of every file name)", v.Name, len(v.Name), MaxVariantName)
	}
	if _, ok := variantFormats[v.Format]; !ok {
		return fmt.Errorf("variant %s: unknown format %q (%s)", v.Name, v.Format, FormatNames)
	}
	if _, ok := variantSpaces[v.Space]; !ok {
		return fmt.Errorf("variant %s: unknown colour space %q (srgb, displayp3, adobergb, prophoto, rec2020)", v.Name, v.Space)
	}
	if v.Size < 0 || v.Size > MaxOutputSide {
		return fmt.Errorf("variant %s: size %d out of range 1..%d (leave size out for the full size)", v.Name, v.Size, MaxOutputSide)
	}
	if err := v.validateSize(); err != nil {
		return err
	}
	if v.Quality < 0 || v.Quality > 100 {
		return fmt.Errorf("variant %s: quality %d out of range 1..100", v.Name, v.Quality)
	}
	if v.Subsampling != "" {
		if v.Format != "jpeg" && v.Format != "avif" && v.Format != "uhdr" {
			return fmt.Errorf("variant %s: subsampling %s is for jpeg, uhdr and avif, not %s", v.Name, v.Subsampling, v.Format)
		}
		if err := encode.CheckJPEGSubsampling(v.Subsampling); err != nil {
			return fmt.Errorf("variant %s: %w", v.Name, err)
		}
	}
	if !(v.Sharpen >= 0 && v.Sharpen <= 10) {
		return fmt.Errorf("variant %s: sharpen %g out of range 0..10", v.Name, v.Sharpen)
	}
	switch v.Source {
	case SourceRaw, "raw", SourcePreview, SourceAuto:
	default:
		return fmt.Errorf("variant %s: unknown source %q (raw, preview, auto)", v.Name, v.Source)
	}
	if v.HDR != "" && v.Source == SourcePreview {
		return fmt.Errorf("variant %s: hdr=%s needs the raw data (source=preview: an embedded preview is an SDR picture)", v.Name, v.HDR)
	}
	if err := v.validateWholeFrame(); err != nil {
		return err
	}
	if err := v.validateUHDR(); err != nil {
		return err
	}
	return v.validateTIFF()
}

// Ext returns the variant's file extension, with its dot.
func (v Variant) Ext() string { return variantFormats[v.Format] }

// Suffix returns what follows STEM in the variant's file name: ".jpg" for
// the variant "main", ".thumb.webp" for "thumb".
func (v Variant) Suffix() string {
	if v.Name == "main" {
		return v.Ext()
	}
	return "." + v.Name + v.Ext()
}

// Presets are the --preset variant sets.
var Presets = map[string][]Variant{
	"web": {
		{Name: "main", Format: "jpeg", Size: 2048, Quality: 90, Space: "srgb"},
		{Name: "thumb", Format: "webp", Size: 512, Quality: 80, Space: "srgb"},
	},
	"print":   {{Name: "main", Format: "tiff16", Space: "adobergb"}},
	"archive": {{Name: "main", Format: "tiff16", Space: "prophoto"}},
}

// PresetNames lists the presets, for messages.
const PresetNames = "web, print or archive"

// Preset returns the variants of the preset name, Normal; quality, when
// not 0, replaces the quality of its lossy variants.
func Preset(name string, quality int) ([]Variant, error) {
	return PresetDefaults(name, VariantDefaults{Quality: quality})
}

// PresetDefaults is Preset with d's quality (when not 0) and JPEG
// subsampling (when not "") replacing the preset's.
func PresetDefaults(name string, d VariantDefaults) ([]Variant, error) {
	quality := d.Quality
	vs, ok := Presets[strings.ToLower(name)]
	if !ok {
		return nil, fmt.Errorf("preset %q: want %s", name, PresetNames)
	}
	out := make([]Variant, len(vs))
	for i, v := range vs {
		if quality != 0 && v.lossy() {
			v.Quality = quality
		}
		if d.Subsampling != "" && (v.Format == "jpeg" || v.Format == "uhdr") {
			v.Subsampling = d.Subsampling
		}
		out[i] = v.Normal()
	}
	return out, nil
}

// CheckVariants reports an invalid variant, names given twice (also when
// they differ only in case: their files would collide on a
// case-insensitive file system) or two variants writing the same file name.
func CheckVariants(vs []Variant) error {
	names, suffixes := map[string]string{}, map[string]string{}
	for _, v := range vs {
		if err := v.Validate(); err != nil {
			return err
		}
		if other, ok := names[strings.ToLower(v.Name)]; ok {
			if other == v.Name {
				return fmt.Errorf("variant %s given twice", v.Name)
			}
			return fmt.Errorf("variants %s and %s: names that differ only in case would collide on case-insensitive file systems; rename one", other, v.Name)
		}
		names[strings.ToLower(v.Name)] = v.Name
		if other, ok := suffixes[v.Suffix()]; ok {
			return fmt.Errorf("variants %s and %s would both write STEM%s", other, v.Name, v.Suffix())
		}
		suffixes[v.Suffix()] = v.Name
	}
	return nil
}
