package pipeline

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/rawbatch/rawbatch/pipeline/resize"
)

// MaxOutputSide is the largest side, in pixels, of any output image (JPEG's
// and the variant size syntax's limit).
const MaxOutputSide = 65535

// parseSize reads a size= value into v: a long edge ("2048"), a box to fit
// inside ("1600x1200"), a width or a height alone ("1600x", "x1200"), or a
// percentage of the full size ("50%", "12.5%").
func (v *Variant) parseSize(spec, val string) error {
	bad := func(why string) error {
		return fmt.Errorf("variant %q: size=%s: %s (want a long edge 2048, a box 1600x1200, a width 1600x, a height x1200 or a percentage 50%%; leave size out for the full size)", spec, val, why)
	}
	side := func(s string) (int, error) {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > MaxOutputSide {
			return 0, fmt.Errorf("%q is not a side of 1..%d pixels", s, MaxOutputSide)
		}
		return n, nil
	}
	switch {
	case strings.HasSuffix(val, "%"):
		p, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(val, "%")), 64)
		if err != nil || !(p > 0 && p <= 1000) {
			return bad("a percentage of more than 0 and at most 1000")
		}
		v.Percent = p
	case strings.ContainsAny(val, "xX"):
		ws, hs, _ := strings.Cut(strings.ToLower(val), "x")
		ws, hs = strings.TrimSpace(ws), strings.TrimSpace(hs)
		if ws == "" && hs == "" {
			return bad("no width or height")
		}
		var err error
		if ws != "" {
			if v.Width, err = side(ws); err != nil {
				return bad(err.Error())
			}
		}
		if hs != "" {
			if v.Height, err = side(hs); err != nil {
				return bad(err.Error())
			}
		}
	default:
		n, err := strconv.Atoi(val)
		switch {
		case err != nil:
			return bad(fmt.Sprintf("%q is not a number", val))
		case n < 1 || n > MaxOutputSide:
			return fmt.Errorf("variant %q: size=%s: want a long edge of 1..%d pixels (leave size out for the full size)", spec, val, MaxOutputSide)
		}
		v.Size = n
	}
	return nil
}

// Fit returns the size of v's image made from a w×h full-size image: the
// full size without a size; the long edge Size, the Width×Height box (a
// side of 0 unbounded) or Percent of each side otherwise; never larger
// than w×h unless Upscale. Sizes are in pixels.
func (v Variant) Fit(w, h int) (int, int) {
	switch {
	case v.Percent > 0:
		return resize.Scale(w, h, v.Percent, v.Upscale)
	case v.Width > 0 || v.Height > 0:
		return resize.Fit(w, h, v.Width, v.Height, v.Upscale)
	case v.Size > 0:
		return resize.Fit(w, h, v.Size, v.Size, v.Upscale)
	}
	if w <= 0 || h <= 0 {
		return 0, 0
	}
	return w, h
}

// hasSize reports whether v gives a size (so it may be resized).
func (v Variant) hasSize() bool { return v.Size > 0 || v.Width > 0 || v.Height > 0 || v.Percent > 0 }

// normalSize puts v's size in canonical form: a square box is a long edge,
// 100 % (or above 100 % without upscale) is the full size, and upscale
// without a size is dropped, so that equivalent specs hash equal.
func (v Variant) normalSize() Variant {
	if v.Width > 0 && v.Width == v.Height && v.Size == 0 && v.Percent == 0 {
		v.Size, v.Width, v.Height = v.Width, 0, 0
	}
	if v.Percent == 100 || (v.Percent > 100 && !v.Upscale) || v.Percent < 0 {
		v.Percent = 0
	}
	v.Width, v.Height = max(v.Width, 0), max(v.Height, 0)
	if !v.hasSize() {
		v.Upscale = false
	}
	return v
}

// validateSize reports an out-of-range side or percentage, or more than
// one kind of size.
func (v Variant) validateSize() error {
	kinds := 0
	for _, set := range []bool{v.Size > 0, v.Width > 0 || v.Height > 0, v.Percent > 0} {
		if set {
			kinds++
		}
	}
	switch {
	case kinds > 1:
		return fmt.Errorf("variant %s: give one size: a long edge, a box or a percentage", v.Name)
	case v.Width < 0 || v.Width > MaxOutputSide || v.Height < 0 || v.Height > MaxOutputSide:
		return fmt.Errorf("variant %s: size %dx%d out of range 1..%d", v.Name, v.Width, v.Height, MaxOutputSide)
	case v.Percent < 0 || v.Percent > 1000:
		return fmt.Errorf("variant %s: size %g%% out of range (0, 1000]", v.Name, v.Percent)
	}
	return nil
}

// sizeKey is v's size in renderKey: variants with equal keys resize alike.
func (v Variant) sizeKey() string {
	return fmt.Sprintf("%d/%dx%d/%g%%/%t", v.Size, v.Width, v.Height, v.Percent, v.Upscale)
}

// outputSizeError reports a variant of input in whose image, from a w×h
// full-size image, would be larger than its format holds: more than
// MaxOutputSide pixels a side, or than encode.MaxWebPSide for WebP.
func outputSizeError(in string, v Variant, w, h int, webpMax int) error {
	vw, vh := v.Fit(w, h)
	limit, what := MaxOutputSide, "the largest output side"
	if v.Format == "webp" {
		limit, what = webpMax, "WebP's limit"
	}
	if max(vw, vh) > limit {
		return fmt.Errorf("%s: variant %s would be %d×%d, larger than %s of %d pixels a side; give it size=%d or less", in, v.Name, vw, vh, what, limit, limit)
	}
	return nil
}
