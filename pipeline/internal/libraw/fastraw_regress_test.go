package libraw

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// setLong sets every entry of tag in the IFD chain and SubIFDs of the TIFF
// data to one LONG value (the entry must hold one value).
func setLong(t *testing.T, data []byte, tag uint16, v uint32) {
	t.Helper()
	var bo binary.ByteOrder = binary.LittleEndian
	if string(data[:2]) == "MM" {
		bo = binary.BigEndian
	}
	n := 0
	seen := map[uint32]bool{}
	var walk func(off uint32)
	walk = func(off uint32) {
		for off != 0 && !seen[off] && int(off)+2 <= len(data) {
			seen[off] = true
			cnt := int(bo.Uint16(data[off:]))
			for e := range cnt {
				ep := int(off) + 2 + 12*e
				switch bo.Uint16(data[ep:]) {
				case tag:
					bo.PutUint16(data[ep+2:], 4)
					bo.PutUint32(data[ep+8:], v)
					n++
				case 330:
					if bo.Uint32(data[ep+4:]) == 1 {
						walk(bo.Uint32(data[ep+8:]))
					}
				}
			}
			off = bo.Uint32(data[int(off)+2+12*cnt:])
		}
	}
	walk(bo.Uint32(data[4:]))
	if n == 0 {
		t.Fatalf("no tag %d", tag)
	}
}

// TestFastTilesEdgeFiles: files found by a mutation campaign where ljpeg.c
// and LibRaw's decoder disagreed.
func TestFastTilesEdgeFiles(t *testing.T) {
	if !Bundled() {
		t.Skip("ljpeg.c stands in for LibRaw's decoders only with the bundled LibRaw")
	}
	dir := t.TempDir()
	var paths []string
	write := func(name string, data []byte) {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	// A tile width near 2^32 is one tile across for LibRaw (its column
	// adds up past the raw width at once); (rw + tw - 1) / tw in 32 bits
	// made it none, and ljpeg.c "decoded" a file of no tiles, leaving the
	// raw buffer as malloc returned it.
	for _, p := range ljpegFiles(t)[:2] {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, tw := range []uint32{0xffffffff, 0xffffff00} {
			setLong(t, data, 322, tw)
			write(fmt.Sprintf("tw%x-%s", tw, filepath.Base(p)), data)
		}
	}
	// A file whose last tile's EOI is cut off: LibRaw's decoder looks
	// ahead past the end of the file (9 reads on this one), which Unpack
	// reports as truncation; ljpeg.c decoded it without reading past the
	// end. (The realistic set's, when a benchmark has built it.)
	if real, _ := filepath.Glob("../../../build/realset-v*/realset-64x48-24.dng"); len(real) > 0 {
		data, err := os.ReadFile(real[0])
		if err != nil {
			t.Fatal(err)
		}
		if n := len(data); data[n-2] != 0xff || data[n-1] != 0xd9 {
			t.Fatalf("%s does not end with its last tile's EOI", real[0])
		}
		write("noeoi.dng", data[:len(data)-2])
	}
	for _, p := range paths {
		want := unpackWith(t, p, false, 1)
		for _, threads := range []int{1, 3} {
			got := unpackWith(t, p, true, threads)
			sameUnpack(t, filepath.Base(p), got, want)
		}
	}
}
