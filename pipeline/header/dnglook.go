package header

import (
	"math"

	"github.com/rawbatch/rawbatch/pipeline/tifftag"
)

// DNG tags of the rendering that rawbatch's look reads (DNG 1.6 §6.2):
// ProfileToneCurve (50940, FLOAT pairs x, y in [0, 1]) and
// BaselineExposureOffset (51109, SRATIONAL, EV), both in IFD0 with the
// camera profile.
const (
	// maxToneCurvePoints bounds the pairs read (Adobe's profiles have a few
	// hundred at most).
	maxToneCurvePoints = 4096
)

// dngLook holds those tags as read.
type dngLook struct {
	toneCurve      []float32
	exposureOffset float64
}

// readDNGLook reads ProfileToneCurve and BaselineExposureOffset from d
// (IFD0 of a DNG). A curve with an odd number of values, fewer than two
// pairs, or values that are not finite in [0, 1] is ignored, as is an
// offset that is not finite or beyond ±10 EV.
func readDNGLook(t *tiffBlock, d *ifd) dngLook {
	var l dngLook
	if d == nil {
		return l
	}
	if e, ok := d.find(tifftag.ProfileToneCurve); ok && e.count%2 == 0 && e.count >= 4 && e.count <= 2*maxToneCurvePoints {
		v := t.nums(e, int(e.count))
		good := len(v) == int(e.count)
		for _, x := range v {
			good = good && x >= 0 && x <= 1
		}
		if good {
			l.toneCurve = make([]float32, len(v))
			for i, x := range v {
				l.toneCurve[i] = float32(x)
			}
		}
	}
	if e, ok := d.find(tifftag.BaselineExposureOffset); ok {
		if v := t.nums(e, 1); len(v) == 1 && !math.IsNaN(v[0]) && math.Abs(v[0]) <= 10 {
			l.exposureOffset = v[0]
		}
	}
	return l
}
