package encode

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// isoBox is a box of an ISO base media file (ISO/IEC 14496-12 §4.2):
// start is where its header begins, hdr its header length, end where it
// ends.
type isoBox struct {
	typ             string
	start, hdr, end int
}

// isoChildren lists the boxes in b[from:to] (32-bit sizes only: a
// largesize or to-end box is refused).
func isoChildren(b []byte, from, to int) ([]isoBox, error) {
	var out []isoBox
	for p := from; p < to; {
		if to-p < 8 {
			return nil, errors.New("truncated box header")
		}
		n := int(binary.BigEndian.Uint32(b[p:]))
		if n < 8 || p+n > to {
			return nil, fmt.Errorf("box %q of size %d at %d does not fit", b[p+4:p+8], n, p)
		}
		out = append(out, isoBox{typ: string(b[p+4 : p+8]), start: p, hdr: 8, end: p + n})
		p += n
	}
	return out, nil
}

func findBox(bs []isoBox, typ string) (isoBox, bool) {
	for _, x := range bs {
		if x.typ == typ {
			return x, true
		}
	}
	return isoBox{}, false
}

// AVIFAddCLLI returns the AVIF file f with a clli property (content light
// level: max_content_light_level and max_pic_average_light_level, 16 bits
// each, in nits; ISO/IEC 23000-22 §7.4.4.2 and ISO/IEC 23008-12) added to
// the item properties (ipco) and associated, not essential, with the
// primary item (ipma), and the item locations (iloc) after the meta box
// moved by the bytes added. libavif 0.11 writes no clli (it came in 1.0).
// Values are clamped to 0..65535.
func AVIFAddCLLI(f []byte, maxCLL, maxFALL int) ([]byte, error) {
	out, err := avifAddCLLI(f, uint16(min(max(maxCLL, 0), 65535)), uint16(min(max(maxFALL, 0), 65535)))
	if err != nil {
		return nil, fmt.Errorf("encode: AVIF content light level: %w", err)
	}
	return out, nil
}

func avifAddCLLI(f []byte, maxCLL, maxFALL uint16) ([]byte, error) {
	top, err := isoChildren(f, 0, len(f))
	if err != nil {
		return nil, err
	}
	meta, ok := findBox(top, "meta")
	if !ok {
		return nil, errors.New("no meta box")
	}
	kids, err := isoChildren(f, meta.start+12, meta.end) // meta is a FullBox
	if err != nil {
		return nil, err
	}
	pitm, ok1 := findBox(kids, "pitm")
	iloc, ok2 := findBox(kids, "iloc")
	iprp, ok3 := findBox(kids, "iprp")
	if !ok1 || !ok2 || !ok3 {
		return nil, errors.New("meta box without pitm, iloc or iprp")
	}
	var primary uint32
	if f[pitm.start+8] == 0 {
		primary = uint32(binary.BigEndian.Uint16(f[pitm.start+12:]))
	} else {
		primary = binary.BigEndian.Uint32(f[pitm.start+12:])
	}
	props, err := isoChildren(f, iprp.start+8, iprp.end)
	if err != nil {
		return nil, err
	}
	ipco, ok1 := findBox(props, "ipco")
	ipma, ok2 := findBox(props, "ipma")
	if !ok1 || !ok2 || ipco.end > ipma.start {
		return nil, errors.New("iprp without ipco followed by ipma")
	}
	pcs, err := isoChildren(f, ipco.start+8, ipco.end)
	if err != nil {
		return nil, err
	}
	index := len(pcs) + 1 // 1-based property index of the new clli

	// The primary item's association list in ipma.
	ver, flags := f[ipma.start+8], f[ipma.start+11]
	p := ipma.start + 12
	n := int(binary.BigEndian.Uint32(f[p:]))
	p += 4
	wide := flags&1 != 0
	countAt, insertAt := -1, -1
	for range n {
		var id uint32
		if ver < 1 {
			id, p = uint32(binary.BigEndian.Uint16(f[p:])), p+2
		} else {
			id, p = binary.BigEndian.Uint32(f[p:]), p+4
		}
		c := int(f[p])
		per := 1
		if wide {
			per = 2
		}
		if id == primary {
			countAt, insertAt = p, p+1+c*per
		}
		p += 1 + c*per
		if p > ipma.end {
			return nil, errors.New("truncated ipma")
		}
	}
	if countAt < 0 || f[countAt] == 255 {
		return nil, errors.New("primary item has no property associations to extend")
	}
	var assoc []byte
	switch {
	case wide:
		assoc = binary.BigEndian.AppendUint16(nil, uint16(index))
	case index < 128:
		assoc = []byte{byte(index)}
	default:
		return nil, errors.New("too many properties for 7-bit ipma indices")
	}
	clli := []byte{0, 0, 0, 12, 'c', 'l', 'l', 'i', byte(maxCLL >> 8), byte(maxCLL), byte(maxFALL >> 8), byte(maxFALL)}
	grow := len(clli) + len(assoc)

	out := make([]byte, 0, len(f)+grow)
	out = append(out, f[:ipco.end]...)
	out = append(out, clli...)
	out = append(out, f[ipco.end:insertAt]...)
	out = append(out, assoc...)
	out = append(out, f[insertAt:]...)
	shift := func(pos int) int { // where a byte of f before the insertions' ends lands
		switch {
		case pos >= insertAt:
			return pos + grow
		case pos >= ipco.end:
			return pos + len(clli)
		}
		return pos
	}
	addSize := func(start, d int) {
		q := shift(start)
		binary.BigEndian.PutUint32(out[q:], binary.BigEndian.Uint32(out[q:])+uint32(d))
	}
	addSize(meta.start, grow)
	addSize(iprp.start, grow)
	addSize(ipco.start, len(clli))
	addSize(ipma.start, len(assoc))
	out[shift(countAt)]++
	if err := ilocShift(out[shift(iloc.start):shift(iloc.end)], uint64(meta.end), uint64(grow)); err != nil {
		return nil, err
	}
	return out, nil
}

// ilocShift adds d to every file offset in the iloc box b (ISO/IEC
// 14496-12 §8.11.3, versions 0..2, construction method 0) at or after
// from: the base offsets when the box has them, else the extent offsets.
func ilocShift(b []byte, from, d uint64) error {
	ver := b[8]
	p := 12
	if len(b) < p+2 {
		return errors.New("truncated iloc")
	}
	offSize, lenSize := int(b[p]>>4), int(b[p]&15)
	baseSize, idxSize := int(b[p+1]>>4), 0
	if ver == 1 || ver == 2 {
		idxSize = int(b[p+1] & 15)
	}
	p += 2
	var items int
	if ver < 2 {
		items, p = int(binary.BigEndian.Uint16(b[p:])), p+2
	} else {
		items, p = int(binary.BigEndian.Uint32(b[p:])), p+4
	}
	get := func(at, n int) uint64 {
		var v uint64
		for i := range n {
			v = v<<8 | uint64(b[at+i])
		}
		return v
	}
	put := func(at, n int, v uint64) {
		for i := n - 1; i >= 0; i-- {
			b[at+i] = byte(v)
			v >>= 8
		}
	}
	bump := func(at, n int) {
		if n > 0 {
			if v := get(at, n); v >= from {
				put(at, n, v+d)
			}
		}
	}
	for range items {
		if ver < 2 {
			p += 2
		} else {
			p += 4
		}
		method := 0
		if ver == 1 || ver == 2 {
			method, p = int(binary.BigEndian.Uint16(b[p:])&15), p+2
		}
		p += 2 // data_reference_index
		if p+baseSize+2 > len(b) {
			return errors.New("truncated iloc")
		}
		base := p
		p += baseSize
		extents := int(binary.BigEndian.Uint16(b[p:]))
		p += 2
		if method == 0 && baseSize > 0 {
			bump(base, baseSize)
		}
		for range extents {
			p += idxSize
			if p+offSize+lenSize > len(b) {
				return errors.New("truncated iloc")
			}
			if method == 0 && baseSize == 0 {
				bump(p, offSize)
			}
			p += offSize + lenSize
		}
	}
	return nil
}

// AVIFContentLightLevel returns the clli property of the AVIF file f
// (ok false when it has none), for tests and inspection.
func AVIFContentLightLevel(f []byte) (maxCLL, maxFALL int, ok bool) {
	top, err := isoChildren(f, 0, len(f))
	if err != nil {
		return 0, 0, false
	}
	meta, ok := findBox(top, "meta")
	if !ok {
		return 0, 0, false
	}
	kids, err := isoChildren(f, meta.start+12, meta.end)
	if err != nil {
		return 0, 0, false
	}
	iprp, ok := findBox(kids, "iprp")
	if !ok {
		return 0, 0, false
	}
	props, _ := isoChildren(f, iprp.start+8, iprp.end)
	ipco, ok := findBox(props, "ipco")
	if !ok {
		return 0, 0, false
	}
	pcs, _ := isoChildren(f, ipco.start+8, ipco.end)
	c, ok := findBox(pcs, "clli")
	if !ok || c.end-c.start != 12 {
		return 0, 0, false
	}
	return int(binary.BigEndian.Uint16(f[c.start+8:])), int(binary.BigEndian.Uint16(f[c.start+10:])), true
}
