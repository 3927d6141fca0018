package cache

import (
	"errors"
	"os"
	"testing"
)

// bandsOf returns a w×h×ch image of 16-bit codes (a pattern of seed) in
// bands of band rows.
func bandsOf(w, h, ch, band int, seed uint16) [][]uint16 {
	var bands [][]uint16
	for y0 := 0; y0 < h; y0 += band {
		b := make([]uint16, min(band, h-y0)*w*ch)
		for i := range b {
			b[i] = uint16(y0*w*ch+i)*7 + seed
		}
		bands = append(bands, b)
	}
	return bands
}

func sameBands(a, b [][]uint16) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if len(a[k]) != len(b[k]) {
			return false
		}
		for i := range a[k] {
			if a[k][i] != b[k][i] {
				return false
			}
		}
	}
	return true
}

// TestSamplesRoundTrip: an image stored as 16-bit bands (PutSamples, or
// PutFunc filling them) comes back code for code, in the bands it was
// written in, read (GetSamples) or mapped (MapSamples), with its
// metadata; the file is the header, 2 bytes a sample and the trailer.
func TestSamplesRoundTrip(t *testing.T) {
	forEachDir(t, func(t *testing.T, dir string) {
		c := mustOpen(t, dir, 0)
		const w, h, ch, band = 37, 29, 3, 8
		bands := bandsOf(w, h, ch, band, 3)
		key := Key("samples")
		if err := c.PutSamples(key, Samples{W: w, H: h, C: ch, Band: band, Bands: bands, Meta: []byte("meta")}); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Stat(c.path(key)); err != nil || fi.Size() != EntryBytes(w, h, ch)+4+8 {
			t.Fatalf("entry file: %v, %v; want %d bytes", fi, err, EntryBytes(w, h, ch)+4+8)
		}
		m, err := c.GetSamples(key)
		if err != nil || m.W != w || m.H != h || m.C != ch || m.Band != band || string(m.Meta) != "meta" || !sameBands(m.Bands, bands) {
			t.Fatalf("GetSamples: %+v, %v", m, err)
		}
		mm, release, err := c.MapSamples(key)
		if err != nil || mm.Band != band || string(mm.Meta) != "meta" || !sameBands(mm.Bands, bands) {
			t.Fatalf("MapSamples: %+v, %v", mm, err)
		}
		release()
		release() // twice is safe

		// PutFunc: the same bytes as PutSamples of the same bands.
		key2 := Key("func")
		if err := c.PutFunc(key2, w, h, ch, band, func(k int, dst []uint16) { copy(dst, bands[k]) }, []byte("meta")); err != nil {
			t.Fatal(err)
		}
		a, _ := os.ReadFile(c.path(key))
		b, _ := os.ReadFile(c.path(key2))
		if len(a) != len(b) || string(a[:keyOff]) != string(b[:keyOff]) || string(a[headerSize:]) != string(b[headerSize:]) {
			t.Error("PutFunc's file differs from PutSamples' (beyond the key)")
		}
		if err := c.PutSamples(key, Samples{W: w, H: h, C: ch, Band: band, Bands: bands[1:]}); err == nil {
			t.Error("PutSamples with a band missing: no error")
		}
	})
}

// TestMapSamplesCorrupt: a mapped entry whose payload or metadata fails
// its checksum, or which is truncated, is ErrCorrupt and deleted; an
// absent one is ErrMiss.
func TestMapSamplesCorrupt(t *testing.T) {
	forEachDir(t, func(t *testing.T, dir string) {
		c := mustOpen(t, dir, 0)
		const w, h, ch, band = 20, 17, 3, 4
		key := Key("mapped")
		if _, _, err := c.MapSamples(key); err != ErrMiss {
			t.Fatalf("absent: %v, want ErrMiss", err)
		}
		for name, damage := range map[string]func(b []byte) []byte{
			"payload":   func(b []byte) []byte { b[headerSize+5*w*ch] ^= 1; return b },
			"metadata":  func(b []byte) []byte { b[len(b)-9] ^= 1; return b },
			"truncated": func(b []byte) []byte { return b[:len(b)-1] },
		} {
			if err := c.PutSamples(key, Samples{W: w, H: h, C: ch, Band: band, Bands: bandsOf(w, h, ch, band, 1), Meta: []byte("m")}); err != nil {
				t.Fatal(err)
			}
			b, _ := os.ReadFile(c.path(key))
			if err := os.WriteFile(c.path(key), damage(b), 0o600); err != nil {
				t.Fatal(err)
			}
			if _, _, err := c.MapSamples(key); !errors.Is(err, ErrCorrupt) {
				t.Errorf("%s: %v, want ErrCorrupt", name, err)
			}
			if _, err := os.Lstat(c.path(key)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s: corrupt entry not deleted (%v)", name, err)
			}
		}
	})
}
