package pipeline

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/rawbatch/rawbatch/pipeline/colour"
)

// A Variant is one rendition written for each input: its format, size,
// quality, colour space and sharpening.
type Variant struct {
	// Name is "main" for the file named STEM.EXT; any other name gives
	// STEM.NAME.EXT. 1..MaxVariantName letters, digits, '-' and '_'.
	Name string
	// Format is jpeg, tiff16, webp, png8 or png16.
	Format string
	// Size is the long edge in pixels; 0 keeps the full size.
	Size int
	// Quality is the JPEG or WebP quality, 1..100 (0: DefaultQuality).
	// Lossless formats ignore it.
	Quality int
	// Space is the output colour space: srgb, displayp3, adobergb,
	// prophoto or rec2020.
	Space string
	// Sharpen is the unsharp-mask amount (0: none).
	Sharpen float64
}

// DefaultQuality is the quality of a lossy variant that gives none.
const DefaultQuality = 90

// MaxVariantName is the longest variant name, in bytes.
const MaxVariantName = 32

// variantFormats maps a variant format to its file extension.
var variantFormats = map[string]string{
	"jpeg": ".jpg", "tiff16": ".tif", "webp": ".webp", "png8": ".png", "png16": ".png",
}

// lossyFormats are the variant formats that use Quality.
var lossyFormats = map[string]bool{"jpeg": true, "webp": true}

// variantSpaces maps a --variant space name to its colour space.
var variantSpaces = map[string]*colour.Space{
	"srgb": colour.SRGB, "displayp3": colour.DisplayP3, "adobergb": colour.AdobeRGB,
	"prophoto": colour.ProPhoto, "rec2020": colour.Rec2020,
}

// VariantSyntax is the syntax of a variant spec (--variant, variants:).
const VariantSyntax = "NAME=FORMAT[,size=PX][,quality=Q][,space=SPACE][,sharpen=AMOUNT]"

// ParseVariant parses NAME=FORMAT[,size=PX][,quality=Q][,space=SPACE]
// [,sharpen=AMOUNT], the syntax of --variant. A lossy variant that gives no
// quality gets DefaultQuality. The result is Normal.
func ParseVariant(s string) (Variant, error) {
	return ParseVariantQuality(s, 0)
}

// ParseVariantQuality is ParseVariant with quality (1..100; 0 for
// DefaultQuality) as the quality of a lossy variant that gives none.
func ParseVariantQuality(s string, quality int) (Variant, error) {
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
			if v.Size, err = strconv.Atoi(val); err == nil && v.Size < 1 {
				return Variant{}, fmt.Errorf("variant %q: size=%s: want a long edge of 1..65535 pixels (leave size out for the full size)", s, val)
			}
		case "quality":
			if v.Quality, err = strconv.Atoi(val); err == nil && (v.Quality < 1 || v.Quality > 100) {
				return Variant{}, fmt.Errorf("variant %q: quality=%s out of range 1..100 (leave quality out for the default, %d)", s, val, DefaultQuality)
			}
		case "space":
			v.Space = strings.ToLower(val)
		case "sharpen":
			v.Sharpen, err = strconv.ParseFloat(val, 64)
		default:
			return Variant{}, fmt.Errorf("variant %q: unknown key %q (size, quality, space, sharpen)", s, k)
		}
		if err != nil {
			return Variant{}, fmt.Errorf("variant %q: %s=%q is not a number", s, k, val)
		}
	}
	if err := v.Validate(); err != nil {
		return Variant{}, err
	}
	return v.Normal(), nil
}

// Normal returns v in its canonical form, so that variants that write the
// same file compare (and hash) equal: a lossy format's quality 0 becomes
// DefaultQuality, a lossless format's quality 0 (it has none), a size
// below 1 is 0 (full size), and a sharpening of -0 is 0.
func (v Variant) Normal() Variant {
	switch {
	case !lossyFormats[v.Format]:
		v.Quality = 0
	case v.Quality == 0:
		v.Quality = DefaultQuality
	}
	if v.Size < 0 {
		v.Size = 0
	}
	if v.Sharpen == 0 {
		v.Sharpen = 0 // -0 prints as "-0"
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
		return fmt.Errorf("variant %s: unknown format %q (jpeg, tiff16, webp, png8, png16)", v.Name, v.Format)
	}
	if _, ok := variantSpaces[v.Space]; !ok {
		return fmt.Errorf("variant %s: unknown colour space %q (srgb, displayp3, adobergb, prophoto, rec2020)", v.Name, v.Space)
	}
	if v.Size < 0 || v.Size > 65535 {
		return fmt.Errorf("variant %s: size %d out of range 1..65535 (0: full size)", v.Name, v.Size)
	}
	if v.Quality < 0 || v.Quality > 100 {
		return fmt.Errorf("variant %s: quality %d out of range 1..100", v.Name, v.Quality)
	}
	if !(v.Sharpen >= 0 && v.Sharpen <= 10) {
		return fmt.Errorf("variant %s: sharpen %g out of range 0..10", v.Name, v.Sharpen)
	}
	return nil
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
	vs, ok := Presets[strings.ToLower(name)]
	if !ok {
		return nil, fmt.Errorf("preset %q: want %s", name, PresetNames)
	}
	out := make([]Variant, len(vs))
	for i, v := range vs {
		if quality != 0 && lossyFormats[v.Format] {
			v.Quality = quality
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
