package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/rawbatch/rawbatch/pipeline"
)

// variantSettings are the report's variant and preset settings as they ran,
// from the resolved options rather than from the sources' raw values:
// variant is the list of the variants converted, one spec each in
// --variant's syntax (empty for the single default output, also when it
// comes from RAWBATCH_VARIANTS' one string or a preset); preset is the
// preset's name when the variants are a preset's, else "" (a preset beaten
// by --variant or --format did not run).
func variantSettings(st *settings, s pipeline.Settings) (variant []string, preset string) {
	variant = []string{}
	for _, v := range s.Variants {
		variant = append(variant, variantSpec(v))
	}
	keys, _ := variantKeys(value{name: "variant", st: st})
	if len(s.Variants) > 0 && len(keys) == 1 && keys[0] == "preset" {
		preset = st.GetString("preset")
	}
	return variant, preset
}

// variantSpec writes v in --variant's syntax (pipeline.VariantSyntax) with
// every option that applies to its format, as resolved: quality for JPEG
// and WebP, compress and predictor for a compressed TIFF.
func variantSpec(v pipeline.Variant) string {
	v = v.Normal()
	parts := []string{v.Name + "=" + v.Format}
	switch {
	case v.Width > 0 || v.Height > 0:
		box := "x"
		if v.Width > 0 {
			box = strconv.Itoa(v.Width) + box
		}
		if v.Height > 0 {
			box += strconv.Itoa(v.Height)
		}
		parts = append(parts, "size="+box)
	case v.Percent > 0:
		parts = append(parts, fmt.Sprintf("size=%g%%", v.Percent))
	case v.Size > 0:
		parts = append(parts, "size="+strconv.Itoa(v.Size))
	}
	if v.Upscale {
		parts = append(parts, "upscale=true")
	}
	if v.Quality > 0 {
		parts = append(parts, "quality="+strconv.Itoa(v.Quality))
	}
	if v.Subsampling != "" {
		parts = append(parts, "subsampling="+v.Subsampling)
	}
	parts = append(parts, "space="+v.Space)
	if v.Sharpen != 0 {
		parts = append(parts, fmt.Sprintf("sharpen=%g", v.Sharpen))
	}
	if v.Compress != "" {
		parts = append(parts, "compress="+v.Compress, "predictor="+v.Predictor)
	}
	return strings.Join(parts, ",")
}

// jpegSubsamplingSetting is the report's jpeg-subsampling setting: the
// subsampling the single default output was written with when it is a
// JPEG (444 or 420 by quality for auto), else the setting as given
// ("auto" or a value; each JPEG variant's spec names its own).
func jpegSubsamplingSetting(s pipeline.Settings) string {
	if vs := s.OutputVariants(); len(s.Variants) == 0 && len(vs) == 1 && vs[0].Format == "jpeg" {
		return vs[0].Subsampling
	}
	if s.JPEGSubsampling == "" {
		return "auto"
	}
	return s.JPEGSubsampling
}
