package libraw

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rawbatch/rawbatch/internal/rawerr"
	"github.com/rawbatch/rawbatch/pipeline/synthdng"
)

// tileAt returns the offset of tile i (TileOffsets, 324) of the first
// IFD (IFD0's chain or its SubIFDs) that has tiles.
func tileAt(t *testing.T, data []byte, i int) int {
	t.Helper()
	var bo binary.ByteOrder = binary.LittleEndian
	if string(data[:2]) == "MM" {
		bo = binary.BigEndian
	}
	var walk func(off uint32) int
	walk = func(off uint32) int {
		for n := 0; off != 0 && int(off)+2 <= len(data) && n < 16; n++ {
			cnt := int(bo.Uint16(data[off:]))
			for e := range cnt {
				ep := int(off) + 2 + 12*e
				tag, count, v := bo.Uint16(data[ep:]), bo.Uint32(data[ep+4:]), bo.Uint32(data[ep+8:])
				switch {
				case tag == 324 && count == 1 && i == 0:
					return int(v)
				case tag == 324 && uint32(i) < count:
					return int(bo.Uint32(data[int(v)+4*i:]))
				case tag == 330:
					if got := walk(v); got > 0 {
						return got
					}
				}
			}
			off = bo.Uint32(data[int(off)+2+12*cnt:])
		}
		return 0
	}
	off := walk(bo.Uint32(data[4:]))
	if off <= 0 || off+40 > len(data) || data[off] != 0xff || data[off+1] != 0xd8 {
		t.Fatalf("no lossless JPEG tile %d found (offset %d)", i, off)
	}
	return off
}

// TestDamagedTileHeaderSameAfterAnyFile: a lossless-JPEG raw whose first
// tile header is overwritten gives the same result on a handle that
// unpacked one file before it as on one that unpacked another: a corrupt
// error. LibRaw's decoders write nothing for such a file and the raw
// buffer malloc handed back held the earlier file's pixels (a 64×48 ARW
// converted to stripes that depended on the file converted before it in
// the same worker); the 600×400 ARW's damaged header also left it with a
// black level of 2^27 against a white level of 4095.
func TestDamagedTileHeaderSameAfterAnyFile(t *testing.T) {
	if !Bundled() {
		t.Skip("the tile checks of fastraw.cpp need the bundled LibRaw")
	}
	dir := t.TempDir()
	scene := func(seed int) func(x, y, c int) float64 {
		return func(x, y, c int) float64 { return float64((x*7+y*13+c*5+seed)%97) / 97 }
	}
	arw := func(name string, w, h, tile int, seed int) string {
		p := filepath.Join(dir, name)
		if err := synthdng.WriteSonyLosslessARW(p, synthdng.ARWSpec{Width: w, Height: h, TileWidth: tile, TileLength: tile,
			Bits: 14, BlackLevel: 512, WhiteLevel: 16383, Model: synthdng.RealModel, Scene: scene(seed)}); err != nil {
			t.Fatal(err)
		}
		return p
	}
	dng := func(name string, w, h, tile int, seed int) string {
		p := filepath.Join(dir, name)
		if err := synthdng.WriteFile(p, synthdng.Spec{Width: w, Height: h, BlackLevel: 512, WhiteLevel: 16383,
			Compression: 7, TileSize: tile, Scene: scene(seed)}); err != nil {
			t.Fatal(err)
		}
		return p
	}
	damage := func(p string) string {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		off := tileAt(t, data, 0)
		for i := off + 2; i < off+40; i++ { // the markers after SOI
			data[i] = byte(i*151 + 7)
		}
		q := p[:len(p)-4] + "-tilehdr" + filepath.Ext(p)
		if err := os.WriteFile(q, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return q
	}
	for _, c := range []struct {
		bad  string
		a, b string // good files of its size, different pixels
	}{
		{damage(arw("a64.arw", 64, 48, 256, 0)), arw("a64-1.arw", 64, 48, 256, 1), arw("a64-2.arw", 64, 48, 256, 2)},
		{damage(arw("a600.arw", 600, 400, 256, 0)), arw("a600-1.arw", 600, 400, 256, 1), arw("a600-2.arw", 600, 400, 256, 2)},
		{damage(dng("d64.dng", 64, 48, 32, 0)), dng("d64-1.dng", 64, 48, 32, 1), dng("d64-2.dng", 64, 48, 32, 2)},
	} {
		name := filepath.Base(c.bad)
		var got []unpacked
		for _, prev := range []string{c.a, c.b} {
			h := newHandle(t)
			if err := h.Open(prev); err != nil {
				t.Fatal(err)
			}
			if err := h.Unpack(); err != nil {
				t.Fatal(err)
			}
			var u unpacked
			err := h.Open(c.bad)
			if err == nil {
				err = h.Unpack()
			}
			if err != nil {
				u.err = err.Error()
				if !errors.Is(err, rawerr.ErrCorrupt) {
					t.Errorf("%s: %v, want a corrupt-file error", name, err)
				}
			} else {
				t.Errorf("%s: unpacked with no error", name)
			}
			if raw, w, hh, err := h.CopyRaw(nil); err == nil {
				u.raw, u.w, u.h = raw, w, hh
			}
			h.Close()
			got = append(got, u)
		}
		if got[0].err != got[1].err || !slices.Equal(got[0].raw, got[1].raw) {
			t.Errorf("%s: after %s: %q, %d samples; after %s: %q, %d samples (equal %v)", name,
				filepath.Base(c.a), got[0].err, len(got[0].raw), filepath.Base(c.b), got[1].err, len(got[1].raw), slices.Equal(got[0].raw, got[1].raw))
		}
		t.Logf("%s: %s", name, got[0].err)
	}
}

// TestTileFrameLargerThanTile: a DNG tile whose lossless JPEG frame
// header claims 65535 × 65535 samples fails at once as corrupt; LibRaw's
// decoder went through every row it claims (35 s of CPU for a 1.5 MP
// file) before failing.
func TestTileFrameLargerThanTile(t *testing.T) {
	if !Bundled() {
		t.Skip("the tile checks of fastraw.cpp need the bundled LibRaw")
	}
	p := filepath.Join(t.TempDir(), "hw.dng")
	if err := synthdng.WriteFile(p, synthdng.Spec{Width: 600, Height: 400, BlackLevel: 512, WhiteLevel: 16383,
		Compression: 7, TileSize: 128, Scene: func(x, y, c int) float64 { return float64((x*7+y*13+c*5)%97) / 97 }}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	off := tileAt(t, data, 6) // the second row of tiles: not the last
	sof := off + 2
	for sof+1 < len(data) && !(data[sof] == 0xff && data[sof+1] == 0xc3) {
		sof += 4 + int(binary.BigEndian.Uint16(data[sof+2:])) - 2
	}
	if sof+9 > len(data) {
		t.Fatal("no SOF3 in tile 6")
	}
	binary.BigEndian.PutUint16(data[sof+5:], 65535) // height
	binary.BigEndian.PutUint16(data[sof+7:], 65535) // width
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, fast := range []bool{true, false} {
		u := unpackWith(t, p, fast, 2)
		if !strings.Contains(u.err, "corrupt") || !strings.Contains(u.err, "tile 7 of 20") || !strings.Contains(u.err, "65535 × 65535") {
			t.Errorf("fast %v: %q, want a corrupt-file error naming tile 7's frame", fast, u.err)
		}
	}
}

// TestBlackAboveWhiteIsCorrupt: a black level above the white level is a
// corrupt file when it is opened.
func TestBlackAboveWhiteIsCorrupt(t *testing.T) {
	p := filepath.Join(t.TempDir(), "black.dng")
	if err := synthdng.WriteFile(p, synthdng.Spec{Width: 64, Height: 48, BlackLevel: 512, WhiteLevel: 16383,
		Scene: func(x, y, c int) float64 { return 0.5 }}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	setLong(t, data, 50714, 20000) // BlackLevel
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	h := newHandle(t)
	err = h.Open(p)
	if !errors.Is(err, rawerr.ErrCorrupt) || !strings.Contains(err.Error(), "black level 20000 above the white level 16383") {
		t.Fatalf("open: %v, want a corrupt-file error naming the levels", err)
	}
}
