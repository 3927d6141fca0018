package synthdng

import (
	"fmt"

	"github.com/rawbatch/rawbatch/pipeline/tifftag"
)

// Tag is an extra tag written into IFD0 (Dir tifftag.DirImage), the Exif
// IFD (DirExif) or the GPS IFD (DirGPS, tag 34853 of IFD0), for tests of
// metadata copying. Exactly one value field is set: ASCII (written with
// its NUL), Shorts, Longs, Rationals and SRationals (numerator,
// denominator pairs), Bytes (BYTE) or Undefined (UNDEFINED).
type Tag struct {
	Dir        tifftag.Dir
	ID         uint16
	ASCII      string
	Shorts     []uint16
	Longs      []uint32
	Rationals  []uint32
	SRationals []int32
	Bytes      []byte
	Undefined  []byte
}

// addTo adds t to d.
func (t Tag) addTo(d *ifd) error {
	n := 0
	switch {
	case t.ASCII != "":
		d.ascii(t.ID, t.ASCII)
		n++
	case t.Shorts != nil:
		d.shorts(t.ID, t.Shorts...)
		n++
	case t.Longs != nil:
		d.longs(t.ID, t.Longs...)
		n++
	case t.Rationals != nil:
		if len(t.Rationals)%2 != 0 {
			return fmt.Errorf("synthdng: tag %d: odd number of rational parts", t.ID)
		}
		d.rationals(t.ID, t.Rationals...)
		n++
	case t.SRationals != nil:
		if len(t.SRationals)%2 != 0 {
			return fmt.Errorf("synthdng: tag %d: odd number of rational parts", t.ID)
		}
		d.srationals(t.ID, t.SRationals...)
		n++
	case t.Bytes != nil:
		d.bytes(t.ID, t.Bytes...)
		n++
	case t.Undefined != nil:
		d.undefined(t.ID, t.Undefined)
		n++
	}
	if n == 0 {
		return fmt.Errorf("synthdng: tag %d has no value", t.ID)
	}
	return nil
}

// tagsIn returns the extra tags of directory dir.
func (r *resolved) tagsIn(dir tifftag.Dir) []Tag {
	var out []Tag
	for _, t := range r.Tags {
		if t.Dir == dir {
			out = append(out, t)
		}
	}
	return out
}

// buildGPS returns the GPS IFD, nil when Spec.Tags has no GPS tag.
func (r *resolved) buildGPS() (*ifd, error) {
	ts := r.tagsIn(tifftag.DirGPS)
	if len(ts) == 0 {
		return nil, nil
	}
	d := &ifd{}
	for _, t := range ts {
		if err := t.addTo(d); err != nil {
			return nil, err
		}
	}
	return d, nil
}
