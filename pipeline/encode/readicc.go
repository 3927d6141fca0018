package encode

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"io"

	"github.com/rawbatch/rawbatch/pipeline/tifftag"
)

// maxICC bounds a profile ReadICC returns, in bytes: the largest the
// JPEG form can hold (255 chunks of iccChunkMax).
const maxICC = 255 * iccChunkMax

// ReadICC returns the ICC profile embedded in b, an image file in a
// format rawbatch writes: JPEG (APP2 "ICC_PROFILE\0" chunks in sequence,
// ICC.1:2010 Annex B.4), PNG (iCCP, zlib-compressed, PNG 1.2 §11.3.3.3),
// WebP (the extended container's "ICCP" chunk, RFC 9649 §2.7) or TIFF
// (InterColorProfile, tag 34675, of IFD0); nil and no error when it has none or
// b is another format. Errors: a damaged profile or container.
func ReadICC(b []byte) ([]byte, error) {
	switch {
	case len(b) > 3 && b[0] == 0xFF && b[1] == 0xD8:
		return jpegICC(b)
	case bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")):
		return pngICC(b)
	case len(b) >= 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WEBP":
		return webpICC(b)
	case bytes.HasPrefix(b, []byte("II*\x00")):
		return tiffICC(b, binary.LittleEndian)
	case bytes.HasPrefix(b, []byte("MM\x00*")):
		return tiffICC(b, binary.BigEndian)
	}
	return nil, nil
}

var errICC = errors.New("encode: damaged embedded ICC profile")

// jpegICC joins the APP2 ICC chunks before the first scan by their
// sequence numbers.
func jpegICC(b []byte) ([]byte, error) {
	chunks := map[int][]byte{}
	count := 0
	for i := 2; i+4 <= len(b) && b[i] == 0xFF; {
		m := b[i+1]
		if m == 0xDA || m == 0xD9 { // start of scan, end of image
			break
		}
		n := int(binary.BigEndian.Uint16(b[i+2:]))
		if n < 2 || i+2+n > len(b) {
			return nil, errICC
		}
		seg := b[i+4 : i+2+n]
		if m == 0xE2 && len(seg) > len(iccSig)+2 && string(seg[:len(iccSig)]) == iccSig {
			seq, total := int(seg[len(iccSig)]), int(seg[len(iccSig)+1])
			if seq < 1 || seq > total || (count != 0 && total != count) {
				return nil, errICC
			}
			count = total
			chunks[seq] = seg[len(iccSig)+2:]
		}
		i += 2 + n
	}
	if count == 0 {
		return nil, nil
	}
	var out []byte
	for seq := 1; seq <= count; seq++ {
		c, ok := chunks[seq]
		if !ok {
			return nil, errICC
		}
		out = append(out, c...)
	}
	return out, nil
}

// pngICC inflates the iCCP chunk.
func pngICC(b []byte) ([]byte, error) {
	for i := 8; i+12 <= len(b); {
		n := int(binary.BigEndian.Uint32(b[i:]))
		typ := string(b[i+4 : i+8])
		if n < 0 || i+12+n > len(b) {
			return nil, errICC
		}
		data := b[i+8 : i+8+n]
		switch typ {
		case "iCCP":
			name := bytes.IndexByte(data, 0)
			if name < 0 || name+2 > len(data) || data[name+1] != 0 {
				return nil, errICC
			}
			zr, err := zlib.NewReader(bytes.NewReader(data[name+2:]))
			if err != nil {
				return nil, errICC
			}
			defer zr.Close()
			p, err := io.ReadAll(io.LimitReader(zr, int64(maxICC)+1))
			if err != nil || len(p) > maxICC {
				return nil, errICC
			}
			return p, nil
		case "IDAT", "IEND":
			return nil, nil
		}
		i += 12 + n
	}
	return nil, nil
}

// webpICC returns the ICCP chunk's payload.
func webpICC(b []byte) ([]byte, error) {
	for i := 12; i+8 <= len(b); {
		n := int(binary.LittleEndian.Uint32(b[i+4:]))
		if n < 0 || i+8+n > len(b) {
			return nil, errICC
		}
		if string(b[i:i+4]) == "ICCP" {
			return b[i+8 : i+8+n], nil
		}
		i += 8 + n + n&1 // chunks are padded to even sizes
	}
	return nil, nil
}

// tiffICC returns the value of IFD0's InterColorProfile entry.
func tiffICC(b []byte, bo binary.ByteOrder) ([]byte, error) {
	if len(b) < 8 {
		return nil, errICC
	}
	ifd := int(bo.Uint32(b[4:]))
	if ifd < 8 || ifd+2 > len(b) {
		return nil, errICC
	}
	n := int(bo.Uint16(b[ifd:]))
	entries := b[ifd+2:]
	if len(entries) < 12*n {
		return nil, errICC
	}
	i := 0
	for i < n && bo.Uint16(entries[12*i:]) != tifftag.InterColorProfile {
		i++
	}
	if i == n {
		return nil, nil
	}
	e := entries[12*i:]
	count := int(bo.Uint32(e[4:]))
	if count <= 4 {
		return e[8 : 8+count], nil
	}
	off := int(bo.Uint32(e[8:]))
	if count > maxICC || off < 0 || off+count > len(b) {
		return nil, errICC
	}
	return b[off : off+count], nil
}
