package cache

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc64"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zeebo/xxh3"
)

// testDirs returns the directories every behavioural test runs in: an
// ordinary directory and, when present, one on /dev/shm.
func testDirs(t testing.TB) map[string]string {
	dirs := map[string]string{"tempdir": t.TempDir()}
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		d, err := os.MkdirTemp("/dev/shm", "rawbatch-cache-test-*")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(d) })
		dirs["shm"] = d
	}
	return dirs
}

// forEachDir runs f in a subtest per test directory, skipping /dev/shm's
// subtest with a note when /dev/shm is absent.
func forEachDir(t *testing.T, f func(t *testing.T, dir string)) {
	dirs := testDirs(t)
	for _, name := range []string{"tempdir", "shm"} {
		t.Run(name, func(t *testing.T) {
			d, ok := dirs[name]
			if !ok {
				t.Skip("/dev/shm is absent")
			}
			f(t, filepath.Join(d, "c"))
		})
	}
}

func mustOpen(t testing.TB, dir string, max int64) *Cache {
	t.Helper()
	c, err := Open(dir, max)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// image returns a w×h×ch image whose samples depend on seed: values
// k/65535 as LibRaw's float copy gives them (float32(k)·(1/65535)), which
// the cache stores without loss, including 0 and 1.
func image(w, h, ch int, seed uint32) []float32 {
	pix := make([]float32, w*h*ch)
	x := seed*2654435761 + 1
	for i := range pix {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		pix[i] = float32(x%65536) * unit
	}
	copy(pix, []float32{0, 1, unit, 65534 * unit})
	return pix
}

// sameBits reports whether a and b are bit-for-bit identical.
func sameBits(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

// mappingOf returns the first /proc/self/maps line of a mapping of a file
// whose path ends in suffix, or "" if there is none. It skips the test
// when /proc is unavailable.
func mappingOf(t *testing.T, suffix string) string {
	t.Helper()
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		t.Skipf("no /proc/self/maps: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if line := sc.Text(); strings.HasSuffix(line, suffix) {
			return line
		}
	}
	return ""
}

func TestRoundTrip(t *testing.T) {
	forEachDir(t, func(t *testing.T, dir string) {
		c := mustOpen(t, dir, 0)
		const w, h, ch = 1000, 700, 3
		pix := image(w, h, ch, 1)
		key := Key("input-hash", "ahd", "camera-wb", "clip", "full", "libraw-0.21.2")
		if _, err := c.Get(key); err != ErrMiss {
			t.Fatalf("Get before Put: %v, want ErrMiss", err)
		}
		if err := c.Put(key, w, h, ch, pix); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(c.path(key))
		if err != nil {
			t.Fatal(err)
		}
		if want := int64(headerSize + w*h*ch*2); fi.Size() != want || EntryBytes(w, h, ch) != want {
			t.Errorf("entry file is %d bytes, want %d", fi.Size(), want)
		}
		e, err := c.Get(key)
		if err != nil {
			t.Fatal(err)
		}
		if e.W != w || e.H != h || e.C != ch {
			t.Errorf("got %d×%d×%d, want %d×%d×%d", e.W, e.H, e.C, w, h, ch)
		}
		if !sameBits(e.Pix, pix) {
			t.Fatal("pixels differ after the round trip")
		}

		// Pix is memory of the caller's: writable, and nothing of the
		// entry file stays mapped.
		if line := mappingOf(t, key+entryExt); line != "" {
			t.Errorf("the entry file is still mapped after Get: %q", line)
		}
		e.Pix[0] = 0.5

		// A second Get sees the stored data, not the first one's changes.
		e2, err := c.Get(key)
		if err != nil {
			t.Fatal(err)
		}
		if !sameBits(e2.Pix, pix) {
			t.Fatal("pixels differ on the second Get")
		}

		if err := c.Delete(key); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Get(key); err != ErrMiss {
			t.Fatalf("Get after Delete: %v, want ErrMiss", err)
		}
		if err := c.Delete(key); err != nil {
			t.Errorf("Delete of an absent entry: %v", err)
		}
	})
}

// TestEntrySurvivesReplace: an open Entry keeps its data when the key is
// overwritten, deleted or cleared (those only unlink the name).
func TestEntrySurvivesReplace(t *testing.T) {
	forEachDir(t, func(t *testing.T, dir string) {
		c := mustOpen(t, dir, 0)
		key := Key("x")
		a, b := image(64, 48, 3, 1), image(64, 48, 3, 2)
		if err := c.Put(key, 64, 48, 3, a); err != nil {
			t.Fatal(err)
		}
		e, err := c.Get(key)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Put(key, 64, 48, 3, b); err != nil {
			t.Fatal(err)
		}
		if !sameBits(e.Pix, a) {
			t.Fatal("open entry changed when its key was overwritten")
		}
		e2, err := c.Get(key)
		if err != nil {
			t.Fatal(err)
		}
		if !sameBits(e2.Pix, b) {
			t.Fatal("Get after overwrite does not return the new image")
		}
		if _, err := c.Clear(); err != nil {
			t.Fatal(err)
		}
		if !sameBits(e.Pix, a) {
			t.Fatal("open entry changed after Clear")
		}
	})
}

func TestPutErrors(t *testing.T) {
	c := mustOpen(t, t.TempDir(), 0)
	key := Key("k")
	for _, tc := range []struct {
		name     string
		key      string
		w, h, ch int
		n        int
		want     error
	}{
		{"short pix", key, 10, 10, 3, 299, nil},
		{"long pix", key, 10, 10, 3, 301, nil},
		{"zero width", key, 0, 10, 3, 0, nil},
		{"negative channels", key, 10, 10, -3, 300, nil},
		{"huge", key, math.MaxInt32, math.MaxInt32, math.MaxInt32, 3, nil},
		{"bad key", "../../etc/passwd", 10, 10, 3, 300, ErrBadKey},
		{"upper-case key", strings.ToUpper(key), 10, 10, 3, 300, ErrBadKey},
	} {
		err := c.Put(tc.key, tc.w, tc.h, tc.ch, make([]float32, tc.n))
		if err == nil || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("%s: Put: %v, want an error (%v)", tc.name, err, tc.want)
		}
	}
	if _, err := c.Get("nothex"); !errors.Is(err, ErrBadKey) {
		t.Errorf("Get of a bad key: %v", err)
	}
	if err := c.Delete("nothex"); !errors.Is(err, ErrBadKey) {
		t.Errorf("Delete of a bad key: %v", err)
	}
	if s, _ := c.Stats(); s.Entries != 0 {
		t.Errorf("failed Puts left %d entries", s.Entries)
	}
	ents, _ := os.ReadDir(c.Dir())
	for _, de := range ents {
		if strings.HasPrefix(de.Name(), tmpPrefix) {
			t.Errorf("failed Put left %s", de.Name())
		}
	}

	small := mustOpen(t, t.TempDir(), EntryBytes(10, 10, 3)-1)
	if err := small.Put(key, 10, 10, 3, make([]float32, 300)); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Put larger than the cap: %v, want ErrTooLarge", err)
	}
	if _, err := Open(t.TempDir(), -1); err == nil {
		t.Error("Open with a negative cap succeeded")
	}
}

// rewriteHeader lets f change the header of the entry file p and then
// recomputes the header checksum, so that only the change is wrong.
func rewriteHeader(t *testing.T, p string, f func(b []byte)) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	f(b)
	binary.LittleEndian.PutUint64(b[hdrSumOff:], xxh3.Hash(b[:hdrSumOff]))
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestCorrupt(t *testing.T) {
	const w, h, ch = 37, 23, 3
	n := int64(w * h * ch * 2)
	damage := map[string]func(t *testing.T, p string){
		"flip payload byte": func(t *testing.T, p string) {
			f, err := os.OpenFile(p, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			b := make([]byte, 1)
			off := int64(headerSize) + n/2 + 1
			f.ReadAt(b, off)
			b[0] ^= 0x10
			if _, err := f.WriteAt(b, off); err != nil {
				t.Fatal(err)
			}
		},
		"flip header byte": func(t *testing.T, p string) {
			f, err := os.OpenFile(p, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.WriteAt([]byte{0x01}, 17); err != nil { // width
				t.Fatal(err)
			}
		},
		"garbage header": func(t *testing.T, p string) {
			f, err := os.OpenFile(p, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.WriteAt(bytes.Repeat([]byte("garbage!"), 8), 0); err != nil {
				t.Fatal(err)
			}
		},
		"truncated payload": func(t *testing.T, p string) {
			if err := os.Truncate(p, headerSize+n-4); err != nil {
				t.Fatal(err)
			}
		},
		"truncated header": func(t *testing.T, p string) {
			if err := os.Truncate(p, 40); err != nil {
				t.Fatal(err)
			}
		},
		"empty": func(t *testing.T, p string) {
			if err := os.Truncate(p, 0); err != nil {
				t.Fatal(err)
			}
		},
		"extended": func(t *testing.T, p string) {
			if err := os.Truncate(p, headerSize+n+4); err != nil {
				t.Fatal(err)
			}
		},
		"future format version": func(t *testing.T, p string) {
			rewriteHeader(t, p, func(b []byte) { binary.LittleEndian.PutUint32(b[8:], FormatVersion+1) })
		},
		"older format version": func(t *testing.T, p string) {
			rewriteHeader(t, p, func(b []byte) { binary.LittleEndian.PutUint32(b[8:], FormatVersion-1) })
		},
		"another key in the header": func(t *testing.T, p string) {
			rewriteHeader(t, p, func(b []byte) { b[keyOff+5] ^= 0x40 })
		},
		"flip key byte": func(t *testing.T, p string) {
			f, err := os.OpenFile(p, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			b := make([]byte, 1)
			if _, err := f.ReadAt(b, keyOff+31); err != nil {
				t.Fatal(err)
			}
			b[0] ^= 0x5a
			if _, err := f.WriteAt(b, keyOff+31); err != nil {
				t.Fatal(err)
			}
		},
		"version 2's big-endian flag": func(t *testing.T, p string) {
			rewriteHeader(t, p, func(b []byte) { b[12] ^= 1 })
		},
		"dimensions disagree with length": func(t *testing.T, p string) {
			rewriteHeader(t, p, func(b []byte) {
				binary.LittleEndian.PutUint64(b[16:], h)
				binary.LittleEndian.PutUint64(b[24:], w+1)
			})
		},
		"zero dimensions": func(t *testing.T, p string) {
			rewriteHeader(t, p, func(b []byte) {
				binary.LittleEndian.PutUint64(b[16:], 0)
				binary.LittleEndian.PutUint64(b[40:], 0)
			})
		},
		"payload checksum field": func(t *testing.T, p string) {
			rewriteHeader(t, p, func(b []byte) { b[50] ^= 1 })
		},
	}
	forEachDir(t, func(t *testing.T, dir string) {
		c := mustOpen(t, dir, 0)
		for name, f := range damage {
			t.Run(name, func(t *testing.T) {
				key := Key(name)
				if err := c.Put(key, w, h, ch, image(w, h, ch, 7)); err != nil {
					t.Fatal(err)
				}
				p := c.path(key)
				f(t, p)
				_, err := c.Get(key)
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("Get: %v, want ErrCorrupt", err)
				}
				if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("corrupt file not deleted (%v)", err)
				}
				if _, err := c.Get(key); err != ErrMiss {
					t.Errorf("second Get: %v, want ErrMiss", err)
				}
			})
		}
	})
}

// TestCorruptAfterVerified: a file damaged in place after a good Get fails
// the next Get: every Get checks the payload checksum.
func TestCorruptAfterVerified(t *testing.T) {
	forEachDir(t, func(t *testing.T, dir string) {
		c := mustOpen(t, dir, 0)
		key := Key("v")
		if err := c.Put(key, 50, 40, 3, image(50, 40, 3, 3)); err != nil {
			t.Fatal(err)
		}
		_, err := c.Get(key)
		if err != nil {
			t.Fatal(err)
		}
		f, err := os.OpenFile(c.path(key), os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt([]byte{0xff, 0xff}, headerSize+1000); err != nil {
			t.Fatal(err)
		}
		f.Close()
		if _, err := c.Get(key); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("Get after in-place damage: %v, want ErrCorrupt", err)
		}
	})
}

func TestEviction(t *testing.T) {
	forEachDir(t, func(t *testing.T, dir string) {
		const w, h, ch = 40, 30, 3
		size := int64(headerSize + w*h*ch*2)
		c := mustOpen(t, dir, 3*size)
		keys := make([]string, 5)
		for i := range keys {
			keys[i] = Key("evict", strconv.Itoa(i))
		}
		base := time.Now().Add(-time.Hour)
		put := func(i int) {
			t.Helper()
			if err := c.Put(keys[i], w, h, ch, image(w, h, ch, uint32(i))); err != nil {
				t.Fatal(err)
			}
			// Distinct, increasing last-used times regardless of the
			// filesystem's timestamp granularity.
			tm := base.Add(time.Duration(i) * time.Minute)
			if err := os.Chtimes(c.path(keys[i]), tm, tm); err != nil {
				t.Fatal(err)
			}
		}
		put(0)
		put(1)
		put(2)
		// Entry 0 is the oldest by Put, but Get makes it the most recently used.
		_, err := c.Get(keys[0])
		if err != nil {
			t.Fatal(err)
		}
		put(3) // evicts 1
		put(4) // evicts 2
		for i, want := range []bool{true, false, false, true, true} {
			_, err := os.Stat(c.path(keys[i]))
			if have := err == nil; have != want {
				t.Errorf("entry %d present = %v, want %v", i, have, want)
			}
		}
		s, err := c.Stats()
		if err != nil {
			t.Fatal(err)
		}
		if s.Entries != 3 || s.Bytes != 3*size || s.MaxBytes != 3*size {
			t.Errorf("Stats = %+v, want 3 entries of %d bytes, cap %d", s, 3*size, 3*size)
		}
		// Replacing an existing key keeps the others.
		put(3)
		if s, _ := c.Stats(); s.Entries != 3 {
			t.Errorf("after overwriting a key: %d entries, want 3", s.Entries)
		}

		// The entry just written is never the victim, even when the others
		// look more recently used (e.g. another process's clock is ahead).
		future := time.Now().Add(time.Hour)
		for _, i := range []int{0, 3, 4} {
			os.Chtimes(c.path(keys[i]), future, future)
		}
		newKey := Key("evict", "new")
		if err := c.Put(newKey, w, h, ch, image(w, h, ch, 9)); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(c.path(newKey)); err != nil {
			t.Error("Put evicted the entry it had just written")
		}
		if s, _ := c.Stats(); s.Entries != 3 {
			t.Errorf("after a Put with newer neighbours: %d entries, want 3", s.Entries)
		}
		// Put's second pass (after the rename; it matters when another
		// process filled the directory meanwhile) spares the new entry even
		// when it is the oldest.
		os.Chtimes(c.path(newKey), base, base)
		c.evict(2*size, newKey, true)
		if _, err := os.Stat(c.path(newKey)); err != nil {
			t.Error("evict removed the entry it was told to keep")
		}
		if s, _ := c.Stats(); s.Entries != 2 {
			t.Errorf("after evict to 2 entries' worth: %d entries", s.Entries)
		}
	})
}

func TestCachedirTag(t *testing.T) {
	forEachDir(t, func(t *testing.T, dir string) {
		c := mustOpen(t, dir, 0)
		b, err := os.ReadFile(filepath.Join(dir, "CACHEDIR.TAG"))
		if err != nil {
			t.Fatal(err)
		}
		first, _, _ := strings.Cut(string(b), "\n")
		if first != "Signature: 8a477f597d28d172789f06886806bc55" {
			t.Errorf("CACHEDIR.TAG starts with %q", first)
		}
		fi, err := os.Stat(dir)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o700 {
			t.Errorf("directory mode %v, want 0700", fi.Mode().Perm())
		}
		// A second Open keeps an existing tag as it is.
		os.WriteFile(filepath.Join(dir, "CACHEDIR.TAG"), []byte(first+"\n# mine\n"), 0o644)
		mustOpen(t, dir, 0)
		if b, _ := os.ReadFile(filepath.Join(dir, "CACHEDIR.TAG")); string(b) != first+"\n# mine\n" {
			t.Errorf("Open rewrote an existing tag: %q", b)
		}
		_ = c
	})
}

func TestOpenRefusesForeignPermissions(t *testing.T) {
	d := filepath.Join(t.TempDir(), "c")
	if err := os.Mkdir(d, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(d, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(d, 0); err == nil {
		t.Error("Open accepted a world-writable directory")
	}
	f := filepath.Join(t.TempDir(), "file")
	os.WriteFile(f, nil, 0o600)
	if _, err := Open(f, 0); err == nil {
		t.Error("Open accepted a regular file")
	}
}

func TestKey(t *testing.T) {
	seen := map[string][]string{}
	for _, parts := range [][]string{
		{}, {""}, {"", ""}, {"a"}, {"ab", "c"}, {"a", "bc"}, {"abc"}, {"a", "b", "c"},
		{"c", "ab"}, {"a\x00", "b"}, {"a", "\x00b"},
		{"xxh3:0123456789abcdef", "ahd", "camera", "clip", "full", "0.21.2"},
		{"xxh3:0123456789abcdef", "ahd", "camera", "clip", "half", "0.21.2"},
		{"xxh3:0123456789abcdef", "ahd", "camera", "clip", "full", "0.21.3"},
	} {
		k := Key(parts...)
		if checkKey(k) != nil {
			t.Errorf("Key(%q) = %q is not 64 lowercase hex digits", parts, k)
		}
		if k != Key(parts...) {
			t.Errorf("Key(%q) is not deterministic", parts)
		}
		if prev, ok := seen[k]; ok {
			t.Errorf("Key(%q) == Key(%q)", parts, prev)
		}
		seen[k] = parts
	}
	if Key("ab", "c") == Key("a", "bc") {
		t.Error(`Key("ab","c") == Key("a","bc")`)
	}
	if keyVersion(FormatVersion, "a") != Key("a") || keyVersion(FormatVersion+1, "a") == Key("a") {
		t.Error("the format version is not part of the key")
	}
}

func TestStatsClearIgnoreUnrelated(t *testing.T) {
	forEachDir(t, func(t *testing.T, dir string) {
		c := mustOpen(t, dir, 0)
		unrelated := []string{"notes.txt", "abc.rbc", strings.Repeat("A", 64) + ".rbc", Key("x") + ".rbc.bak"}
		for _, n := range unrelated {
			os.WriteFile(filepath.Join(dir, n), []byte("keep me"), 0o600)
		}
		os.Mkdir(filepath.Join(dir, Key("dir")+".rbc"), 0o700)
		for i := range 3 {
			if err := c.Put(Key("s", strconv.Itoa(i)), 8, 8, 3, image(8, 8, 3, uint32(i))); err != nil {
				t.Fatal(err)
			}
		}
		s, err := c.Stats()
		if err != nil {
			t.Fatal(err)
		}
		want := int64(3 * (headerSize + 8*8*3*2))
		if s.Entries != 3 || s.Bytes != want || s.Dir != dir {
			t.Errorf("Stats = %+v, want 3 entries, %d bytes", s, want)
		}
		if s.FSSize <= 0 || s.FSFree < 0 || s.FSFree > s.FSSize {
			t.Errorf("Stats filesystem size %d, free %d", s.FSSize, s.FSFree)
		}
		n, err := c.Clear()
		if err != nil || n != 3 {
			t.Fatalf("Clear = %d, %v; want 3", n, err)
		}
		if s, _ := c.Stats(); s.Entries != 0 || s.Bytes != 0 {
			t.Errorf("after Clear: %+v", s)
		}
		for _, n := range append(unrelated, "CACHEDIR.TAG", Key("dir")+".rbc") {
			if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
				t.Errorf("Clear removed %s", n)
			}
		}
	})
}

func TestOpenRemovesStaleTemps(t *testing.T) {
	dir := t.TempDir()
	mustOpen(t, dir, 0)
	old := filepath.Join(dir, tmpPrefix+"killed")
	fresh := filepath.Join(dir, tmpPrefix+"in-progress")
	other := filepath.Join(dir, "old-unrelated")
	for _, p := range []string{old, fresh, other} {
		os.WriteFile(p, []byte("x"), 0o600)
	}
	tm := time.Now().Add(-2 * time.Minute)
	os.Chtimes(old, tm, tm)
	os.Chtimes(other, tm, tm)
	mustOpen(t, dir, 0)
	if _, err := os.Stat(old); err == nil {
		t.Error("stale temporary file not removed")
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Error("fresh temporary file removed")
	}
	if _, err := os.Stat(other); err != nil {
		t.Error("unrelated file removed")
	}
}

func TestDefaults(t *testing.T) {
	d := DefaultDir()
	uid := strconv.Itoa(os.Getuid())
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		if d != "/dev/shm/rawbatch-"+uid {
			t.Errorf("DefaultDir = %q", d)
		}
	} else if d != filepath.Join(os.TempDir(), "rawbatch-cache-"+uid) {
		t.Errorf("DefaultDir = %q", d)
	}
	dir := t.TempDir()
	m, err := DefaultMaxBytes(filepath.Join(dir, "not", "yet"))
	if err != nil {
		t.Fatal(err)
	}
	size, _, err := statfsUp(dir)
	if err != nil {
		t.Fatal(err)
	}
	if m <= 0 || m != size/4 {
		t.Errorf("DefaultMaxBytes = %d, filesystem %d bytes", m, size)
	}
}

// TestConcurrent: goroutines Put different images under one key (through
// two Cache handles, as two processes would) while others Get it; every Get
// must return one of the images exactly — never a torn one, never a miss.
func TestConcurrent(t *testing.T) {
	forEachDir(t, func(t *testing.T, dir string) {
		const w, h, ch, writers, readers = 300, 200, 3, 4, 4
		c := mustOpen(t, dir, 0)
		c2 := mustOpen(t, dir, 0) // a second handle stands in for another process
		key := Key("concurrent")
		imgs := make([][]float32, writers)
		for i := range imgs {
			imgs[i] = image(w, h, ch, uint32(100+i))
		}
		iters := 40
		if testing.Short() {
			iters = 10
		}
		// One entry exists before the readers start: overwriting it must
		// never make it disappear, so no Get may miss.
		if err := c.Put(key, w, h, ch, imgs[0]); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errc := make(chan error, writers+readers)
		done := make(chan struct{})
		for i := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cc := c
				if i%2 == 1 {
					cc = c2
				}
				for range iters {
					if err := cc.Put(key, w, h, ch, imgs[i]); err != nil {
						errc <- err
						return
					}
				}
			}()
		}
		var rwg sync.WaitGroup
		var hits, misses int
		var mu sync.Mutex
		for i := range readers {
			rwg.Add(1)
			go func() {
				defer rwg.Done()
				cc := c
				if i%2 == 1 {
					cc = c2
				}
				for {
					select {
					case <-done:
						return
					default:
					}
					e, err := cc.Get(key)
					if err == ErrMiss {
						mu.Lock()
						misses++
						mu.Unlock()
						runtime.Gosched()
						continue
					}
					if err != nil {
						errc <- err
						return
					}
					ok := e.W == w && e.H == h && e.C == ch
					match := -1
					for j, img := range imgs {
						if ok && sameBits(e.Pix, img) {
							match = j
						}
					}
					if match < 0 {
						errc <- fmt.Errorf("Get returned an image that no writer put (%d×%d×%d)", e.W, e.H, e.C)
						return
					}
					mu.Lock()
					hits++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		close(done)
		rwg.Wait()
		close(errc)
		for err := range errc {
			t.Error(err)
		}
		t.Logf("%d hits, %d misses", hits, misses)
		if hits == 0 || misses != 0 {
			t.Errorf("%d hits, %d misses; want only hits", hits, misses)
		}
		ents, _ := os.ReadDir(dir)
		for _, de := range ents {
			if strings.HasPrefix(de.Name(), tmpPrefix) {
				t.Errorf("left %s", de.Name())
			}
		}
	})
}

// benchDir returns a directory on /dev/shm if present, else an ordinary one.
func benchDir(b *testing.B) string {
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		d, err := os.MkdirTemp("/dev/shm", "rawbatch-cache-bench-*")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.RemoveAll(d) })
		return d
	}
	b.Log("/dev/shm absent: benchmarking on an ordinary directory")
	return b.TempDir()
}

// 24 MP, 3 channels: 288 MB of float32.
const benchW, benchH, benchC = 6000, 4000, 3

var benchImg []float32

func benchImage() []float32 {
	if benchImg == nil {
		benchImg = image(benchW, benchH, benchC, 9)
	}
	return benchImg
}

// BenchmarkPut: conversion to 16 bits, checksum, write and rename of a
// 288 MB image (a 144 MB entry).
func BenchmarkPut(b *testing.B) {
	c := mustOpen(b, benchDir(b), 0)
	pix := benchImage()
	key := Key("bench")
	b.SetBytes(int64(len(pix) * 4))
	b.ResetTimer()
	for b.Loop() {
		if err := c.Put(key, benchW, benchH, benchC, pix); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGet: Get of a 288 MB image (a 144 MB entry) — open, header
// check, reading, checksum and conversion to float32 of the payload,
// mtime bump.
func BenchmarkGet(b *testing.B) {
	c := mustOpen(b, benchDir(b), 0)
	pix := benchImage()
	key := Key("bench")
	if err := c.Put(key, benchW, benchH, benchC, pix); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(pix) * 4))
	b.ResetTimer()
	for b.Loop() {
		if _, err := c.Get(key); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkChecksum compares the payload checksum with CRC-64/ECMA on 100 MB
// in memory (the checksum's own cost, without I/O).
func BenchmarkChecksum(b *testing.B) {
	buf := make([]byte, 100<<20)
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	b.Run("xxh3", func(b *testing.B) {
		b.SetBytes(int64(len(buf)))
		for b.Loop() {
			xxh3.Hash(buf)
		}
	})
	b.Run("crc64-ecma", func(b *testing.B) {
		tab := crc64.MakeTable(crc64.ECMA)
		b.SetBytes(int64(len(buf)))
		for b.Loop() {
			crc64.Checksum(buf, tab)
		}
	})
}

// copyFile copies src to dst (a new inode, as cp does).
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	tmp := dst + ".copy"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		t.Fatal(err)
	}
}

// TestEntryUnderAnotherName: an entry file copied, renamed or hard-linked
// over another key's name is never returned for that key (the header
// records the key); it is deleted as corrupt and the key then misses,
// while the original entry stays good.
func TestEntryUnderAnotherName(t *testing.T) {
	const w, h, ch = 30, 20, 3
	ways := map[string]func(t *testing.T, src, dst string){
		"copied":      copyFile,
		"renamed":     func(t *testing.T, src, dst string) { os.Rename(src, dst) },
		"hard-linked": func(t *testing.T, src, dst string) { os.Remove(dst); os.Link(src, dst) },
	}
	forEachDir(t, func(t *testing.T, dir string) {
		c := mustOpen(t, dir, 0)
		for name, move := range ways {
			t.Run(name, func(t *testing.T) {
				a, b := Key(name, "a"), Key(name, "b")
				imgA, imgB := image(w, h, ch, 1), image(w, h, ch, 2)
				if err := c.Put(a, w, h, ch, imgA); err != nil {
					t.Fatal(err)
				}
				if err := c.Put(b, w, h, ch, imgB); err != nil {
					t.Fatal(err)
				}
				// B read once before its name is taken over.
				e, err := c.Get(b)
				if err != nil {
					t.Fatal(err)
				}
				move(t, c.path(a), c.path(b))
				if _, err := os.Lstat(c.path(b)); err != nil {
					t.Fatalf("setting up: %v", err)
				}
				e, err = c.Get(b)
				if !errors.Is(err, ErrCorrupt) {
					if e != nil {
						t.Errorf("Get(B) returned A's pixels: %v", sameBits(e.Pix, imgA))
					}
					t.Fatalf("Get(B) of A's file: %v, want ErrCorrupt", err)
				}
				if !strings.Contains(err.Error(), a) {
					t.Errorf("error %q does not name the key found in the file", err)
				}
				if _, err := os.Lstat(c.path(b)); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("A's file under B's name not deleted (%v)", err)
				}
				if _, err := c.Get(b); err != ErrMiss {
					t.Errorf("second Get(B): %v, want ErrMiss", err)
				}
				if name != "renamed" {
					e, err := c.Get(a)
					if err != nil {
						t.Fatalf("Get(A) after its copy was rejected: %v", err)
					}
					if !sameBits(e.Pix, imgA) {
						t.Error("A's pixels changed")
					}
				}
			})
		}
	})
}

func TestHeaderHoldsKey(t *testing.T) {
	c := mustOpen(t, t.TempDir(), 0)
	key := Key("layout")
	if err := c.Put(key, 4, 3, 1, image(4, 3, 1, 5)); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(c.path(key))
	if err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	if v := le.Uint32(b[8:]); v != 4 || FormatVersion != 4 {
		t.Errorf("format version %d in the file, FormatVersion %d; want 4 (bands are new in 4)", v, FormatVersion)
	}
	if got := fmt.Sprintf("%x", b[56:88]); got != key {
		t.Errorf("header bytes 56..87 = %s, want the key %s", got, key)
	}
	if le.Uint64(b[88:]) != xxh3.Hash(b[:88]) {
		t.Error("header checksum at 88 does not cover bytes 0..87")
	}
	if len(b) != 96+4*3*1*2 {
		t.Errorf("file is %d bytes", len(b))
	}
}

// getOrHang runs Get in a goroutine. Should Get block (as opening a named
// pipe for reading does), it opens the pipe p for writing to release it
// and fails the test instead of hanging until the test binary's timeout.
func getOrHang(t *testing.T, c *Cache, key, p string) (*Entry, error) {
	t.Helper()
	type result struct {
		e   *Entry
		err error
	}
	ch := make(chan result, 1)
	go func() {
		e, err := c.Get(key)
		ch <- result{e, err}
	}()
	select {
	case r := <-ch:
		return r.e, r.err
	case <-time.After(20 * time.Second): // a hang guard, not a speed check
		if f, err := os.OpenFile(p, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
		<-ch
		t.Fatal("Get blocked on a named pipe under an entry's name")
		return nil, nil
	}
}

// TestGetSpecialFiles: Get never blocks on a named pipe under an entry's
// name, never follows a symlink, and takes neither for an entry: both are
// removed (the symlink's target stays); a directory is a miss left alone.
func TestGetSpecialFiles(t *testing.T) {
	forEachDir(t, func(t *testing.T, dir string) {
		c := mustOpen(t, dir, 0)

		fifo := Key("fifo")
		if err := syscall.Mkfifo(c.path(fifo), 0o600); err != nil {
			t.Skipf("mkfifo: %v", err)
		}
		if _, err := getOrHang(t, c, fifo, c.path(fifo)); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "named pipe") {
			t.Errorf("Get of a named pipe: %v, want ErrCorrupt naming the pipe", err)
		}
		if _, err := os.Lstat(c.path(fifo)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("named pipe not removed (%v)", err)
		}
		if _, err := c.Get(fifo); err != ErrMiss {
			t.Errorf("Get after the pipe was removed: %v, want ErrMiss", err)
		}

		// A symlink to a good entry of the same key outside the cache.
		link := Key("link")
		other := mustOpen(t, filepath.Join(filepath.Dir(dir), "other"), 0)
		if err := other.Put(link, 8, 8, 3, image(8, 8, 3, 1)); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(other.path(link), c.path(link)); err != nil {
			t.Fatal(err)
		}
		if e, err := c.Get(link); !errors.Is(err, ErrCorrupt) {
			if e != nil {
			}
			t.Errorf("Get through a symlink: %v, want ErrCorrupt", err)
		}
		if _, err := os.Lstat(c.path(link)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("symlink not removed (%v)", err)
		}
		if _, err := os.Stat(other.path(link)); err != nil {
			t.Errorf("the symlink's target was removed: %v", err)
		}

		sub := Key("dir")
		if err := os.Mkdir(c.path(sub), 0o700); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Get(sub); !errors.Is(err, ErrCorrupt) {
			t.Errorf("Get of a directory: %v, want ErrCorrupt", err)
		}
		if fi, err := os.Stat(c.path(sub)); err != nil || !fi.IsDir() {
			t.Errorf("directory under an entry's name removed (%v)", err)
		}
	})
}

// TestOpenExisting: OpenExisting creates and writes nothing, and accepts
// only a directory with a proper CACHEDIR.TAG.
func TestOpenExisting(t *testing.T) {
	base := t.TempDir()

	missing := filepath.Join(base, "missing", "c")
	if _, err := OpenExisting(missing, 0); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("OpenExisting of a missing directory: %v, want fs.ErrNotExist", err)
	}
	if _, err := os.Lstat(filepath.Join(base, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("OpenExisting created a directory (%v)", err)
	}

	photos := filepath.Join(base, "photos")
	os.Mkdir(photos, 0o700)
	os.WriteFile(filepath.Join(photos, "IMG_1.CR3"), []byte("raw"), 0o600)
	if _, err := OpenExisting(photos, 0); !errors.Is(err, ErrNotCache) {
		t.Errorf("OpenExisting of a folder without a tag: %v, want ErrNotCache", err)
	}
	empty := filepath.Join(base, "empty")
	os.Mkdir(empty, 0o700)
	if _, err := OpenExisting(empty, 0); !errors.Is(err, ErrNotCache) {
		t.Errorf("OpenExisting of an empty folder: %v, want ErrNotCache", err)
	}
	for _, d := range []string{photos, empty} {
		if _, err := os.Lstat(filepath.Join(d, tagName)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("OpenExisting wrote a CACHEDIR.TAG into %s", d)
		}
	}

	wrongTag := filepath.Join(base, "wrongtag")
	os.Mkdir(wrongTag, 0o700)
	os.WriteFile(filepath.Join(wrongTag, tagName), []byte("Signature: not the one\n"), 0o644)
	if _, err := OpenExisting(wrongTag, 0); !errors.Is(err, ErrNotCache) {
		t.Errorf("OpenExisting with a tag lacking the signature: %v, want ErrNotCache", err)
	}
	fifoTag := filepath.Join(base, "fifotag")
	os.Mkdir(fifoTag, 0o700)
	if err := syscall.Mkfifo(filepath.Join(fifoTag, tagName), 0o600); err == nil {
		if _, err := OpenExisting(fifoTag, 0); !errors.Is(err, ErrNotCache) {
			t.Errorf("OpenExisting with a named pipe as tag: %v, want ErrNotCache", err)
		}
	}

	file := filepath.Join(base, "file")
	os.WriteFile(file, nil, 0o600)
	if _, err := OpenExisting(file, 0); err == nil {
		t.Error("OpenExisting accepted a regular file")
	}
	open := filepath.Join(base, "open")
	os.Mkdir(open, 0o700)
	mustOpen(t, open, 0)
	os.Chmod(open, 0o777)
	if _, err := OpenExisting(open, 0); err == nil {
		t.Error("OpenExisting accepted a world-writable directory")
	}

	// A real cache: usable, and its stale temporary files are left to Open.
	dir := filepath.Join(base, "cache")
	c := mustOpen(t, dir, 0)
	key := Key("e")
	if err := c.Put(key, 8, 8, 3, image(8, 8, 3, 1)); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(dir, tmpPrefix+"killed")
	os.WriteFile(stale, []byte("x"), 0o600)
	old := time.Now().Add(-time.Hour)
	os.Chtimes(stale, old, old)
	c2, err := OpenExisting(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	if s, err := c2.Stats(); err != nil || s.Entries != 1 {
		t.Errorf("Stats = %+v, %v; want 1 entry", s, err)
	}
	if _, err := os.Stat(stale); err != nil {
		t.Error("OpenExisting removed a temporary file")
	}
	if _, err := OpenExisting(dir, -1); err == nil {
		t.Error("OpenExisting with a negative cap succeeded")
	}
}

// TestOpenRefusesUntaggedFolder: Open makes an existing directory a cache
// (tags it) only when it is empty or holds nothing but cache files.
func TestOpenRefusesUntaggedFolder(t *testing.T) {
	base := t.TempDir()
	photos := filepath.Join(base, "photos")
	os.Mkdir(photos, 0o700)
	os.WriteFile(filepath.Join(photos, "IMG_1.CR3"), []byte("raw"), 0o600)
	_, err := Open(photos, 0)
	if !errors.Is(err, ErrNotCache) || !strings.Contains(err.Error(), "IMG_1.CR3") {
		t.Errorf("Open of a photo folder: %v, want ErrNotCache naming a file", err)
	}
	if _, err := os.Lstat(filepath.Join(photos, tagName)); !errors.Is(err, os.ErrNotExist) {
		t.Error("Open tagged a photo folder")
	}

	empty := filepath.Join(base, "empty")
	os.Mkdir(empty, 0o700)
	mustOpen(t, empty, 0)
	if _, err := os.Stat(filepath.Join(empty, tagName)); err != nil {
		t.Errorf("Open did not tag an empty directory: %v", err)
	}

	// A cache whose tag was deleted: only entries and temporary files.
	untagged := filepath.Join(base, "untagged")
	c := mustOpen(t, untagged, 0)
	c.Put(Key("u"), 4, 4, 3, image(4, 4, 3, 1))
	os.WriteFile(filepath.Join(untagged, tmpPrefix+"x"), nil, 0o600)
	os.Remove(filepath.Join(untagged, tagName))
	mustOpen(t, untagged, 0)
	if _, err := os.Stat(filepath.Join(untagged, tagName)); err != nil {
		t.Errorf("Open did not re-tag a cache holding only entries: %v", err)
	}
}

// TestTrim: reopening a cache with a lower cap and calling Trim removes the
// least recently used entries down to the cap.
func TestTrim(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "c")
	c, err := Open(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	pix := make([]float32, 64*64*3)
	keys := []string{Key("a"), Key("b"), Key("c")}
	for i, k := range keys {
		if err := c.Put(k, 64, 64, 3, pix); err != nil {
			t.Fatal(err)
		}
		old := time.Now().Add(time.Duration(i-10) * time.Minute) // a oldest, c newest
		os.Chtimes(c.path(k), old, old)
	}
	st, _ := c.Stats()
	one := st.Bytes / 3
	small, err := Open(dir, one+one/2)
	if err != nil {
		t.Fatal(err)
	}
	small.Trim()
	st, _ = small.Stats()
	if st.Entries != 1 || st.Bytes > one+one/2 {
		t.Fatalf("after Trim: %d entries, %d bytes; want 1 entry within the cap", st.Entries, st.Bytes)
	}
	if _, err := small.Get(keys[2]); err != nil {
		t.Errorf("the newest entry was evicted: %v", err)
	}
}
