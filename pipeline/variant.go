package pipeline

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/rawbatch/rawbatch/pipeline/colour"
)

// A Variant is one rendition written for each input: its format, size,
// quality, colour space and sharpening. Issue 5 (multi-variant export from
// one decode) builds on this; the converter does not use it yet.
type Variant struct {
	// Name is "main" for the file named STEM.EXT; any other name gives
	// STEM.NAME.EXT. Letters, digits, '-' and '_' only.
	Name string
	// Format is jpeg, tiff16, webp, png8 or png16.
	Format string
	// Size is the long edge in pixels; 0 keeps the full size.
	Size int
	// Quality is the JPEG or WebP quality, 1..100 (0: the format's
	// default, 90).
	Quality int
	// Space is the output colour space: srgb, displayp3, adobergb,
	// prophoto or rec2020.
	Space string
	// Sharpen is the unsharp-mask amount (0: none).
	Sharpen float64
}

// variantFormats maps a variant format to its file extension.
var variantFormats = map[string]string{
	"jpeg": ".jpg", "tiff16": ".tif", "webp": ".webp", "png8": ".png", "png16": ".png",
}

// variantSpaces maps a --variant space name to its colour space.
var variantSpaces = map[string]*colour.Space{
	"srgb": colour.SRGB, "displayp3": colour.DisplayP3, "adobergb": colour.AdobeRGB,
	"prophoto": colour.ProPhoto, "rec2020": colour.Rec2020,
}

// ParseVariant parses NAME=FORMAT[,size=PX][,quality=Q][,space=SPACE]
// [,sharpen=AMOUNT], the syntax of --variant.
func ParseVariant(s string) (Variant, error) {
	name, rest, ok := strings.Cut(s, "=")
	if !ok || name == "" || rest == "" {
		return Variant{}, fmt.Errorf("variant %q: want NAME=FORMAT[,size=PX][,quality=Q][,space=SPACE][,sharpen=AMOUNT]", s)
	}
	parts := strings.Split(rest, ",")
	v := Variant{Name: name, Format: strings.ToLower(parts[0]), Space: "srgb"}
	for _, p := range parts[1:] {
		k, val, ok := strings.Cut(p, "=")
		if !ok {
			return Variant{}, fmt.Errorf("variant %q: %q is not KEY=VALUE", s, p)
		}
		var err error
		switch strings.ToLower(k) {
		case "size":
			v.Size, err = strconv.Atoi(val)
		case "quality":
			v.Quality, err = strconv.Atoi(val)
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
	return v, v.Validate()
}

// Validate reports the first invalid field of v.
func (v Variant) Validate() error {
	if v.Name == "" || strings.Trim(v.Name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") != "" {
		return fmt.Errorf("variant name %q: use letters, digits, '-' and '_'", v.Name)
	}
	if _, ok := variantFormats[v.Format]; !ok {
		return fmt.Errorf("variant %s: unknown format %q (jpeg, tiff16, webp, png8, png16)", v.Name, v.Format)
	}
	if _, ok := variantSpaces[v.Space]; !ok {
		return fmt.Errorf("variant %s: unknown colour space %q (srgb, displayp3, adobergb, prophoto, rec2020)", v.Name, v.Space)
	}
	if v.Size < 0 || v.Size > 65535 {
		return fmt.Errorf("variant %s: size %d out of range 0..65535", v.Name, v.Size)
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

// CheckVariants reports duplicate names or two variants writing the same
// file name.
func CheckVariants(vs []Variant) error {
	names, suffixes := map[string]bool{}, map[string]string{}
	for _, v := range vs {
		if err := v.Validate(); err != nil {
			return err
		}
		if names[v.Name] {
			return fmt.Errorf("variant %s given twice", v.Name)
		}
		names[v.Name] = true
		if other, ok := suffixes[v.Suffix()]; ok {
			return fmt.Errorf("variants %s and %s would both write STEM%s", other, v.Name, v.Suffix())
		}
		suffixes[v.Suffix()] = v.Name
	}
	return nil
}
