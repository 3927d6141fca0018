package pipeline

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/rawbatch/rawbatch/internal/rawerr"
	"github.com/rawbatch/rawbatch/pipeline/internal/libraw"
)

// A damaged header can hold numbers that are not finite (a DOUBLE NaN, a
// RATIONAL with denominator 0, a value that overflows LibRaw's float). Any
// of them in the white balance, the colour matrices or the exposure makes
// every pixel NaN: an all-black picture, and a result that cannot be sent
// as JSON. They are refused where they enter the develop, as corrupt data
// naming the tag or field. A number that is read but not used (as-shot
// multipliers found unusable, highlight.AsShotUsable, which the white
// balance replaces) is no reason to fail.

// nonFinite is nil when every value of vs is finite, else a corrupt error
// saying that what holds a number that is not.
func nonFinite(what string, vs ...float64) error {
	bad := false
	for _, v := range vs {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			bad = true
		}
	}
	if !bad {
		return nil
	}
	texts := make([]string, len(vs))
	for i, v := range vs {
		texts[i] = strconv.FormatFloat(v, 'g', 6, 64)
	}
	return fmt.Errorf("%w: %s holds a number that is not finite (%s)", rawerr.ErrCorrupt, what, strings.Join(texts, ", "))
}

// checkMatrices refuses colour matrices LibRaw derived from the file that
// hold a non-finite number.
func checkMatrices(in libraw.Info) error {
	var vs []float64
	for _, row := range in.RGBCam {
		vs = append(vs, row[:]...)
	}
	if err := nonFinite("the camera colour matrix (ColorMatrix1/ColorMatrix2, tags 50721/50722, or the camera's table: LibRaw's rgb_cam)", vs...); err != nil {
		return err
	}
	vs = vs[:0]
	for _, row := range in.CamXYZ {
		vs = append(vs, row[:]...)
	}
	return nonFinite("the camera colour matrix (ColorMatrix1/ColorMatrix2, tags 50721/50722, or the camera's table: LibRaw's cam_xyz)", vs...)
}

// checkWhiteBalance refuses chosen white-balance multipliers that are not
// finite, naming where they came from.
func (j *job) checkWhiteBalance() error {
	what := "the white-balance multipliers (" + j.wb.Source + ")"
	switch j.wb.Source {
	case "as shot":
		what = "the as-shot white balance (AsShotNeutral, tag 50728, or the maker's white-balance tags)"
	case "preview":
		what = "the white balance fitted to the embedded preview"
	case "auto":
		what = "the white balance estimated from the raw data"
	case "daylight":
		what = "the daylight white balance from the camera colour matrix (ColorMatrix1/ColorMatrix2, tags 50721/50722)"
	}
	m := j.wb.Multipliers
	if err := nonFinite(what, m[:]...); err != nil {
		return err
	}
	if j.params.WB == libraw.WBUser {
		p := j.params.Multipliers
		return nonFinite(what, float64(p[0]), float64(p[1]), float64(p[2]), float64(p[3]))
	}
	return nil
}
