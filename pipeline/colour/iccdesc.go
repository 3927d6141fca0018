package colour

import (
	"crypto/md5"
	"encoding/binary"
	"fmt"
	"unicode/utf16"
)

// iccDescriptions are the profile descriptions ('desc' tag) the embedded
// profiles carry, so that editors and viewers name the space. The compact
// profiles as published describe themselves in 3–4 characters ("A98C",
// "uROM", "2020"); these are the spaces' usual names.
var iccDescriptions = map[string]string{
	"sRGB-v2-magic":      "sRGB IEC61966-2.1",
	"sRGB-v4":            "sRGB IEC61966-2.1",
	"DisplayP3-v2-magic": "Display P3",
	"DisplayP3-v4":       "Display P3",
	"AdobeCompat-v2":     "Adobe RGB (1998) compatible",
	"AdobeCompat-v4":     "Adobe RGB (1998) compatible",
	"ProPhoto-v2-magic":  "ProPhoto RGB",
	"ProPhoto-v4":        "ProPhoto RGB",
	"Rec2020-v2-magic":   "Rec. ITU-R BT.2020",
	"Rec2020-v4":         "Rec. ITU-R BT.2020",
	"sGrey-v2-magic":     "sGrey (grey, sRGB tone curve)",
	"sGrey-v4":           "sGrey (grey, sRGB tone curve)",
}

var be32 = binary.BigEndian

// ICC header and tag table layout (ICC.1:2010 §7.2, §7.3).
const (
	iccHeaderSize = 128
	iccFlagsAt    = 44 // profile flags, 4 bytes
	iccIntentAt   = 64 // rendering intent, 4 bytes
	iccIDAt       = 84 // profile ID, 16 bytes
)

// ICCDescription returns the profile description of the ICC profile p:
// the ASCII part of a v2 textDescriptionType ('desc', ICC.1:2001-04
// §6.5.17) or the first record of a v4 multiLocalizedUnicodeType ('mluc',
// ICC.1:2010 §10.13). Errors: a profile too short for its tag table, no
// 'desc' tag, or one that lies outside p or is of another type.
func ICCDescription(p []byte) (string, error) {
	d, err := iccTagData(p, "desc")
	if err != nil {
		return "", err
	}
	switch {
	case len(d) >= 12 && string(d[:4]) == "desc":
		n := int(be32.Uint32(d[8:]))
		if n < 1 || 12+n > len(d) {
			return "", fmt.Errorf("icc: desc: ASCII count %d does not fit its %d-byte tag", n, len(d))
		}
		s := d[12 : 12+n]
		for i, c := range s {
			if c == 0 {
				s = s[:i]
				break
			}
		}
		return string(s), nil
	case len(d) >= 28 && string(d[:4]) == "mluc":
		if be32.Uint32(d[8:]) < 1 || be32.Uint32(d[12:]) < 12 {
			return "", fmt.Errorf("icc: desc: mluc with no record")
		}
		n, off := int(be32.Uint32(d[20:])), int(be32.Uint32(d[24:]))
		if n%2 != 0 || off < 0 || n < 0 || off+n > len(d) {
			return "", fmt.Errorf("icc: desc: mluc record (%d bytes at %d) outside its %d-byte tag", n, off, len(d))
		}
		u := make([]uint16, n/2)
		for i := range u {
			u[i] = binary.BigEndian.Uint16(d[off+2*i:])
		}
		return string(utf16.Decode(u)), nil
	}
	return "", fmt.Errorf("icc: desc tag of unknown type")
}

// iccTagData returns the data of the tag with signature sig in profile p.
func iccTagData(p []byte, sig string) ([]byte, error) {
	if len(p) < iccHeaderSize+4 {
		return nil, fmt.Errorf("icc: %d bytes, shorter than a header and tag count", len(p))
	}
	n := int(be32.Uint32(p[iccHeaderSize:]))
	if n > (len(p)-iccHeaderSize-4)/12 {
		return nil, fmt.Errorf("icc: %d tags do not fit in %d bytes", n, len(p))
	}
	for i := range n {
		e := p[iccHeaderSize+4+12*i:]
		if string(e[:4]) != sig {
			continue
		}
		off, size := uint64(be32.Uint32(e[4:])), uint64(be32.Uint32(e[8:]))
		if off+size > uint64(len(p)) {
			return nil, fmt.Errorf("icc: tag %q (%d bytes at %d) past the end of the %d-byte profile", sig, size, off, len(p))
		}
		return p[off : off+size], nil
	}
	return nil, fmt.Errorf("icc: no %q tag", sig)
}

// withICCDescription returns a copy of profile p whose 'desc' tag says
// desc (ASCII): a textDescriptionType for a version 2 profile, a
// multiLocalizedUnicodeType with one en-US record for version 4 (byte 8 is
// the major version). The new tag data is appended, 4-byte aligned, after
// the existing data, which stays as it is: compact profiles overlap tags
// (the "magic" v2 ones run desc into cprt and wtpt), so nothing is moved.
// The header's profile size is set to the new length and the profile ID
// recomputed: MD5 of the profile with the flags, rendering intent and ID
// fields zeroed (ICC.1:2010 §7.2.18), as the original IDs are. Errors are
// those of a malformed tag table (see ICCDescription).
func withICCDescription(p []byte, desc string) ([]byte, error) {
	if _, err := iccTagData(p, "desc"); err != nil {
		return nil, err
	}
	for _, r := range desc {
		if r < 0x20 || r > 0x7e {
			return nil, fmt.Errorf("icc: description %q is not printable ASCII", desc)
		}
	}
	var data []byte
	if p[8] >= 4 {
		u := utf16.Encode([]rune(desc))
		data = append([]byte("mluc"), 0, 0, 0, 0)
		data = be32.AppendUint32(data, 1)  // number of records
		data = be32.AppendUint32(data, 12) // record size
		data = append(data, "enUS"...)
		data = be32.AppendUint32(data, uint32(2*len(u)))
		data = be32.AppendUint32(data, 28) // offset of the string from the tag start
		for _, c := range u {
			data = binary.BigEndian.AppendUint16(data, c)
		}
	} else {
		data = append([]byte("desc"), 0, 0, 0, 0)
		data = be32.AppendUint32(data, uint32(len(desc)+1))
		data = append(append(data, desc...), 0)
		data = be32.AppendUint32(data, 0)        // Unicode language code
		data = be32.AppendUint32(data, 0)        // Unicode count: none
		data = append(data, 0, 0, 0)             // ScriptCode code and count
		data = append(data, make([]byte, 67)...) // Macintosh description
	}
	out := append([]byte(nil), p...)
	for len(out)%4 != 0 {
		out = append(out, 0)
	}
	at := len(out)
	out = append(out, data...)
	for len(out)%4 != 0 {
		out = append(out, 0)
	}
	n := int(be32.Uint32(out[iccHeaderSize:]))
	for i := range n {
		e := out[iccHeaderSize+4+12*i:]
		if string(e[:4]) == "desc" {
			be32.PutUint32(e[4:], uint32(at))
			be32.PutUint32(e[8:], uint32(len(data)))
		}
	}
	be32.PutUint32(out[0:], uint32(len(out)))
	id := ICCProfileID(out)
	copy(out[iccIDAt:], id[:])
	return out, nil
}

// ICCProfileID returns the profile ID of ICC profile p as ICC.1:2010
// §7.2.18 defines it: the MD5 digest of the whole profile with the profile
// flags (bytes 44–47), rendering intent (64–67) and profile ID (84–99)
// fields set to zero. p must hold at least a 128-byte header (shorter
// input is hashed as it is).
func ICCProfileID(p []byte) [16]byte {
	c := append([]byte(nil), p...)
	if len(c) >= iccHeaderSize {
		clear(c[iccFlagsAt : iccFlagsAt+4])
		clear(c[iccIntentAt : iccIntentAt+4])
		clear(c[iccIDAt : iccIDAt+16])
	}
	return md5.Sum(c)
}
