package header

import "fmt"

// dngColourTags are the DNG colour tags whose values are read from an
// offset (DNG 1.4 §6: matrices and vectors of rationals). One that lies
// past the end of the file makes LibRaw read garbage or nothing for it and
// convert with wrong colours and no warning (measured: mean ΔE2000 43 for a
// ColorMatrix1 cut off), so Read fails such a file as corrupt.
var dngColourTags = []struct {
	tag  uint16
	name string
}{
	{50721, "ColorMatrix1"}, {50722, "ColorMatrix2"},
	{50723, "CameraCalibration1"}, {50724, "CameraCalibration2"},
	{50727, "AnalogBalance"}, {50728, "AsShotNeutral"}, {50729, "AsShotWhiteXY"},
	{50964, "ForwardMatrix1"}, {50965, "ForwardMatrix2"},
}

// checkColourTags sets o.truncated when a DNG colour tag of one of ifds
// (IFD0, where DNG puts them, and the raw IFD) has its value past the end
// of the file: "ColorMatrix1 (tag 50721) lies past the end of the
// 100000-byte file (72 bytes at offset 123456)".
func (o *own) checkColourTags(t *tiffBlock, ifds ...*ifd) {
	if !o.dng || o.truncated != "" {
		return
	}
	for _, d := range ifds {
		if d == nil {
			continue
		}
		for _, c := range dngColourTags {
			e, ok := d.find(c.tag)
			if !ok {
				continue
			}
			pos, n, ok := t.valueSpan(e)
			if ok && pos+n > t.src.size {
				o.truncated = fmt.Sprintf("%s (tag %d) lies past the end of the %d-byte file (%d bytes at offset %d)", c.name, c.tag, t.src.size, n, pos)
				return
			}
		}
	}
}
