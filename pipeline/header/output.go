package header

import (
	"bytes"
	"encoding/binary"
	"io"
	"os"
)

// OutputEXIF reads the EXIF of an image rawbatch writes (JPEG APP1, PNG
// eXIf, WebP EXIF chunk, TIFF IFDs), for what tells one photograph from
// another when an output has no record: Make, Model and DateTime (as in
// Header.EXIF: DateTimeOriginal, else DateTime). ok is false when the file
// cannot be read or holds no EXIF this reads. It reads the first 64 KiB
// and, for WebP, the EXIF chunk (at most 1 MiB).
func OutputEXIF(path string) (e EXIF, ok bool) {
	f, err := os.Open(path)
	if err != nil {
		return e, false
	}
	defer f.Close()
	head := make([]byte, 64<<10)
	n, _ := io.ReadFull(f, head)
	head = head[:n]
	blob := outputExifBlob(f, head)
	if len(blob) < 8 {
		return e, false
	}
	if len(blob) > maxExifBlob {
		blob = blob[:maxExifBlob]
	}
	res := decodeExif(blob, path, false)
	if res.Make == "" && res.Model == "" && res.DateTime.IsZero() {
		return e, false
	}
	return res.EXIF, true
}

// outputExifBlob finds the TIFF-structured EXIF block of f, whose first
// bytes are head.
func outputExifBlob(f *os.File, head []byte) []byte {
	switch recognise(head).format {
	case "TIFF":
		return head
	case "JPEG":
		for p := 2; p+4 <= len(head) && head[p] == 0xFF; {
			marker := head[p+1]
			if marker == 0xD9 || marker == 0xDA { // end of image, start of scan
				return nil
			}
			size := int(binary.BigEndian.Uint16(head[p+2:]))
			end := min(p+2+size, len(head))
			if marker == 0xE1 && bytes.HasPrefix(head[p+4:end], []byte("Exif\x00\x00")) {
				return head[p+10 : end]
			}
			p += 2 + size
		}
	case "PNG":
		for p := 8; p+8 <= len(head); {
			size := int(binary.BigEndian.Uint32(head[p:]))
			if size < 0 || size > len(head) {
				return nil
			}
			if string(head[p+4:p+8]) == "eXIf" {
				return head[p+8 : min(p+8+size, len(head))]
			}
			if string(head[p+4:p+8]) == "IDAT" {
				return nil
			}
			p += 12 + size
		}
	case "WEBP":
		off := int64(12)
		hdr := make([]byte, 8)
		for range 64 { // a rawbatch WebP has at most five chunks
			if _, err := f.ReadAt(hdr, off); err != nil {
				return nil
			}
			size := int64(binary.LittleEndian.Uint32(hdr[4:]))
			if string(hdr[:4]) == "EXIF" {
				if size > 1<<20 {
					return nil
				}
				b := make([]byte, size)
				if _, err := f.ReadAt(b, off+8); err != nil {
					return nil
				}
				return bytes.TrimPrefix(b, []byte("Exif\x00\x00"))
			}
			off += 8 + size + size&1 // chunks are padded to even sizes
		}
	}
	return nil
}
