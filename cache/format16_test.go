package cache

import (
	"encoding/binary"
	"errors"
	"math"
	"os"
	"strings"
	"testing"
	"unsafe"

	"github.com/zeebo/xxh3"
)

// TestSamplesLossless: every 16-bit value k, as LibRaw's float copy gives
// it (float32(k)·(1.0f/65535.0f)), is stored as k and read back bit for
// bit; any other value in [0, 1] comes back within 1/131070 of itself,
// and values outside [0, 1], NaN and infinities are clamped.
func TestSamplesLossless(t *testing.T) {
	for k := range 65536 {
		x := float32(k) * float32(1.0/65535.0) // the C expression, in Go
		if q := quantise(x); int(q) != k {
			t.Fatalf("quantise(%d/65535) = %d", k, q)
		}
		if got := sampleValue[k]; math.Float32bits(got) != math.Float32bits(x) {
			t.Fatalf("value %d reads back as %v, want %v", k, got, x)
		}
	}
	// Values between the codes, as a Go demosaic's output in [0, 1] has.
	x := uint32(12345)
	worst := 0.0
	for range 1_000_000 {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		v := float32(x) / float32(math.MaxUint32)
		v = min(v, 1)
		d := math.Abs(float64(sampleValue[quantise(v)]) - float64(v))
		worst = max(worst, d)
	}
	if limit := 1.0/131070 + 1e-7; worst > limit {
		t.Errorf("largest rounding error %g, want < %g (half a 16-bit step)", worst, limit)
	}
	for _, c := range []struct {
		in   float32
		want uint16
	}{
		{-3.5, 0}, {float32(math.Copysign(0, -1)), 0}, {1e-42, 0}, {float32(math.Inf(-1)), 0},
		{math.Float32frombits(0x7fc01234), 0}, {1.0000001, 65535}, {65535, 65535}, {float32(math.Inf(1)), 65535},
		{0.5 / 65535 * 0.999, 0}, {1.6 / 65535, 2}, {1.4 / 65535, 1}, {0.5, 32768},
	} {
		if got := quantise(c.in); got != c.want {
			t.Errorf("quantise(%v) = %d, want %d", c.in, got, c.want)
		}
	}
}

// TestPutRoundsAndClamps: an image with values between the 16-bit codes
// and outside [0, 1] comes back rounded and clamped, through Put and Get.
func TestPutRoundsAndClamps(t *testing.T) {
	c := mustOpen(t, t.TempDir(), 0)
	pix := []float32{0.1, 0.2, 0.3, -1, 2, float32(math.NaN()), 1 / 3.0, 0.999999, 0}
	key := Key("round")
	if err := c.Put(key, 3, 1, 3, pix); err != nil {
		t.Fatal(err)
	}
	e, err := c.Get(key)
	if err != nil {
		t.Fatal(err)
	}
	for i, x := range pix {
		want := float32(0)
		switch {
		case x > 1:
			want = 1
		case x > 0:
			want = float32(math.Round(float64(x)*65535)) * unit
		}
		if e.Pix[i] != want {
			t.Errorf("sample %d: %v came back as %v, want %v", i, x, e.Pix[i], want)
		}
	}
}

// writeV2Entry writes, at p, an entry file of format version 2 as the
// previous release wrote it: float32 samples in the host's byte order
// (payload W·H·C·4 bytes), flag bit 0 on a big-endian host.
func writeV2Entry(t *testing.T, p, key string, w, h, ch int, pix []float32) {
	t.Helper()
	payload := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(pix))), 4*len(pix))
	b := make([]byte, headerSize, headerSize+len(payload))
	le := binary.LittleEndian
	copy(b, magic)
	le.PutUint32(b[8:], 2)
	one := uint16(1)
	if *(*byte)(unsafe.Pointer(&one)) == 0 {
		le.PutUint32(b[12:], 1)
	}
	le.PutUint64(b[16:], uint64(w))
	le.PutUint64(b[24:], uint64(h))
	le.PutUint64(b[32:], uint64(ch))
	le.PutUint64(b[40:], uint64(len(payload)))
	le.PutUint64(b[48:], xxh3.Hash(payload))
	copy(b[keyOff:hdrSumOff], keyBytes(key))
	le.PutUint64(b[hdrSumOff:], xxh3.Hash(b[:hdrSumOff]))
	if err := os.WriteFile(p, append(b, payload...), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestOldFloat32Entries: entries of format version 2 (float32 samples) are
// never read as images. Under their own names (version 2's keys) a Get of
// this version's key misses them; they count against the cap and are
// evicted like any entry. Under this version's name (copied or renamed
// there, or a key that happened to match) Get rejects the file as corrupt,
// naming its version, and deletes it.
func TestOldFloat32Entries(t *testing.T) {
	forEachDir(t, func(t *testing.T, dir string) {
		const w, h, ch = 20, 10, 3
		old := EntryBytes(w, h, ch) + int64(w*h*ch*2) // 96 + W·H·C·4
		c := mustOpen(t, dir, 0)
		pix := image(w, h, ch, 5)
		parts := []string{"content-hash", "ahd"}
		oldKey := keyVersion(2, parts...)
		writeV2Entry(t, c.path(oldKey), oldKey, w, h, ch, pix)
		if _, err := c.Get(Key(parts...)); err != ErrMiss {
			t.Fatalf("Get of the new key beside a version-2 entry: %v, want ErrMiss", err)
		}
		if s, err := c.Stats(); err != nil || s.Entries != 1 || s.Bytes != old {
			t.Errorf("Stats with one version-2 entry: %+v, %v; want 1 entry of %d bytes", s, err, old)
		}
		_, err := c.Get(oldKey)
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "format version 2") {
			t.Errorf("Get of a version-2 entry: %v, want ErrCorrupt naming format version 2", err)
		}
		if _, err := os.Lstat(c.path(oldKey)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("version-2 entry not deleted by Get (%v)", err)
		}

		// Under this version's key: rejected, never misread.
		key := Key(parts...)
		writeV2Entry(t, c.path(key), key, w, h, ch, pix)
		if e, err := c.Get(key); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "format version 2") {
			t.Fatalf("Get of a version-2 file under a version-3 name: %v, %v; want ErrCorrupt", e, err)
		}
		if _, err := os.Lstat(c.path(key)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("version-2 file under a version-3 name not deleted (%v)", err)
		}

		// Eviction: a version-2 entry is the oldest and goes first.
		writeV2Entry(t, c.path(oldKey), oldKey, w, h, ch, pix)
		capped := mustOpen(t, dir, old+EntryBytes(w, h, ch)-1)
		if err := capped.Put(key, w, h, ch, pix); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Lstat(c.path(oldKey)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("version-2 entry not evicted to make room (%v)", err)
		}
		e, err := capped.Get(key)
		if err != nil || !sameBits(e.Pix, pix) {
			t.Errorf("the new entry: %v", err)
		}
	})
}
