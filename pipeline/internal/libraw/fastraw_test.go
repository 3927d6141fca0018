package libraw

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/rawbatch/rawbatch/pipeline/synthdng"
)

// unpacked is what an unpack leaves: the raw data and the levels LibRaw
// derived, or the error.
type unpacked struct {
	raw    []uint16
	w, h   int
	levels RawLevels
	err    string
	fast   int // tiles ljpeg.c decoded
}

// unpackWith unpacks path on a new handle with the faster tile decoders on
// or off and the given number of threads.
func unpackWith(t *testing.T, path string, fast bool, threads int) unpacked {
	t.Helper()
	rbSetFast(fast)
	defer rbSetFast(true)
	h := newHandle(t)
	defer h.Close() // now, not at the test's end: a 24 MP raw is 48 MB
	var u unpacked
	if err := h.Open(path); err != nil {
		u.err = "open: " + err.Error()
		return u
	}
	if err := h.SetThreads(threads); err != nil {
		t.Fatal(err)
	}
	err := h.Unpack()
	u.fast = h.fastTiles()
	if err != nil {
		u.err = err.Error()
	}
	if raw, w, hh, err := h.CopyRaw(nil); err == nil {
		u.raw, u.w, u.h = raw, w, hh
		u.levels, _ = h.Levels()
	}
	return u
}

// sameUnpack fails t unless a and b are the same sample for sample.
func sameUnpack(t *testing.T, name string, a, b unpacked) {
	t.Helper()
	if a.err != b.err {
		t.Errorf("%s: error %q with ljpeg.c, %q with LibRaw", name, a.err, b.err)
	}
	if a.w != b.w || a.h != b.h || !slices.Equal(a.raw, b.raw) {
		for i := range min(len(a.raw), len(b.raw)) {
			if a.raw[i] != b.raw[i] {
				t.Errorf("%s: %dx%d vs %dx%d; first difference at (%d,%d): %d, LibRaw %d", name, a.w, a.h, b.w, b.h, i%max(a.w, 1), i/max(a.w, 1), a.raw[i], b.raw[i])
				return
			}
		}
		t.Errorf("%s: raw %dx%d (%d samples) vs LibRaw's %dx%d (%d)", name, a.w, a.h, len(a.raw), b.w, b.h, len(b.raw))
	}
	if a.levels.White != b.levels.White || a.levels.Black != b.levels.Black {
		t.Errorf("%s: levels %+v, LibRaw's %+v", name, a.levels, b.levels)
	}
}

// ljpegFiles writes lossless-JPEG DNGs and Sony ARWs whose tiles overhang
// the image's right and bottom edges, with 12-, 14- and 16-bit samples,
// every predictor, and one Huffman table or one a component.
func ljpegFiles(t *testing.T) []string {
	dir := t.TempDir()
	scene := func(x, y, c int) float64 {
		v := 0.5 + 0.45*math.Sin(float64(x)*0.37+float64(c))*math.Cos(float64(y)*0.21)
		return v * (0.9 + 0.1*float64((x*7919+y*104729)%97)/97)
	}
	var paths []string
	for i, s := range []struct {
		w, h, tile, white, psv int
		perComp                bool
	}{
		{600, 400, 256, 4095, 1, false}, {530, 290, 128, 16383, 2, true}, {256, 256, 256, 65535, 3, false},
		{1000, 70, 64, 16383, 4, true}, {300, 200, 64, 16383, 5, false}, {300, 200, 128, 65535, 6, true},
		{300, 200, 64, 4095, 7, false},
	} {
		p := filepath.Join(dir, "dng"+string(rune('a'+i))+".dng")
		if err := synthdng.WriteFile(p, synthdng.Spec{Width: s.w, Height: s.h, BlackLevel: 64, WhiteLevel: uint16(s.white),
			Compression: 7, TileSize: s.tile, Predictor: s.psv, TablePerComponent: s.perComp, Scene: scene}); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	for i, s := range []struct{ w, h, tw, tl int }{{600, 400, 256, 256}, {530, 294, 128, 64}} {
		p := filepath.Join(dir, "arw"+string(rune('a'+i))+".arw")
		if err := synthdng.WriteSonyLosslessARW(p, synthdng.ARWSpec{Width: s.w, Height: s.h, TileWidth: s.tw, TileLength: s.tl,
			Bits: 14, BlackLevel: 512, WhiteLevel: 16383, Model: synthdng.RealModel, Scene: scene}); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	return paths
}

// TestFastTilesMatchLibRaw: the tiles ljpeg.c decodes are LibRaw's own
// decode sample for sample, on one thread and several.
func TestFastTilesMatchLibRaw(t *testing.T) {
	if !Bundled() {
		t.Skip("ljpeg.c stands in for LibRaw's decoders only with the bundled LibRaw")
	}
	// The realistic set's files, when a benchmark has built them.
	real, _ := filepath.Glob("../../../build/realset-v*/realset-*[0-9]x[0-9]*-0[0-3].*")
	for _, p := range append(ljpegFiles(t), real...) {
		want := unpackWith(t, p, false, 1)
		if want.err != "" {
			t.Fatalf("%s: LibRaw: %s", p, want.err)
		}
		for _, threads := range []int{1, 3} {
			got := unpackWith(t, p, true, threads)
			if got.fast == 0 {
				t.Errorf("%s: ljpeg.c decoded no tile", filepath.Base(p))
			}
			sameUnpack(t, filepath.Base(p), got, want)
		}
	}
}

// TestFastTilesFallBack: damaged tile data, truncated files and files of
// other formats decode exactly as LibRaw decodes them, errors included:
// ljpeg.c hands a file it cannot decode exactly back to LibRaw.
func TestFastTilesFallBack(t *testing.T) {
	if !Bundled() {
		t.Skip("ljpeg.c stands in for LibRaw's decoders only with the bundled LibRaw")
	}
	var paths []string
	dir := t.TempDir()
	for _, p := range ljpegFiles(t) {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		base := filepath.Base(p)
		// Runs of bytes changed in the tile data (headers or entropy-coded
		// data, as they fall), one byte changed, and the file cut short.
		files := map[string][]byte{"cut-" + base: data[:len(data)*2/3]}
		for k, frac := range []float64{0.3, 0.5, 0.7, 0.9} {
			bad := slices.Clone(data)
			at := int(frac * float64(len(bad)))
			n := 64
			if k == 3 {
				n = 1
			}
			for i := at; i < at+n; i++ {
				bad[i] ^= 0x5a
			}
			files[fmt.Sprintf("damaged%d-%s", k, base)] = bad
		}
		for name, d := range files {
			q := filepath.Join(dir, name)
			if err := os.WriteFile(q, d, 0o644); err != nil {
				t.Fatal(err)
			}
			paths = append(paths, q)
		}
	}
	corpus := os.Getenv("RAWBATCH_RAWCORPUS")
	if corpus == "" {
		corpus = "../../../../shared/rawcorpus"
	}
	for _, dir := range []string{"../../../testdata/raw", filepath.Join(corpus, "stubs"), filepath.Join(corpus, "unsupported")} {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			paths = append(paths, filepath.Join(dir, e.Name()))
		}
	}
	for _, p := range paths {
		want := unpackWith(t, p, false, 1)
		got := unpackWith(t, p, true, 2)
		sameUnpack(t, filepath.Base(p), got, want)
	}
}

// BenchmarkUnpack24MP times the unpack of the realistic set's 24 MP
// lossless-JPEG DNG and ARW (build them with `make bench` first) with
// ljpeg.c and with LibRaw's decoders, on one thread and on two.
func BenchmarkUnpack24MP(b *testing.B) {
	paths, _ := filepath.Glob("../../../build/realset-v*/realset-6000x4000-0[01].*")
	if len(paths) == 0 {
		b.Skip("no realistic set: run make bench")
	}
	for _, p := range paths {
		for _, mode := range []struct {
			name    string
			fast    bool
			threads int
		}{{"libraw", false, 1}, {"ljpeg", true, 1}, {"ljpeg-2threads", true, 2}} {
			b.Run(filepath.Ext(p)[1:]+"/"+mode.name, func(b *testing.B) {
				rbSetFast(mode.fast)
				defer rbSetFast(true)
				h := newHandle(b)
				for b.Loop() {
					if err := h.Open(p); err != nil {
						b.Fatal(err)
					}
					if err := h.SetThreads(mode.threads); err != nil {
						b.Fatal(err)
					}
					if err := h.Unpack(); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
