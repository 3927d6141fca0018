package jxl

import (
	"bytes"
	"image"
	"image/png"
	"io"
	"math"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/rawbatch/rawbatch/internal/testtool"
)

// gradient returns a w×h RGB image as 8-bit bytes and 16-bit samples.
func gradient(w, h int) ([]byte, []uint16) {
	p8, p16 := make([]byte, 3*w*h), make([]uint16, 3*w*h)
	for y := range h {
		for x := range w {
			i := 3 * (y*w + x)
			c := [3]float64{float64(x) / float64(w), float64(y) / float64(h), float64(x+y) / float64(w+h)}
			for k, v := range c {
				p8[i+k] = uint8(math.Round(v * 255))
				p16[i+k] = uint16(math.Round(v * 65535))
			}
		}
	}
	return p8, p16
}

func encode(t *testing.T, w io.Writer, wd, ht int, o Options) {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	e, err := New(2)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	p8, p16 := gradient(wd, ht)
	if err := e.Encode(w, wd, ht, p8, p16, o); err != nil {
		t.Fatal(err)
	}
}

func srgbICC(t *testing.T) []byte {
	b, err := os.ReadFile(filepath.Join("testdata", "sRGB-v4.icc"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRoundTrip: Debian's djxl decodes a 16-bit lossless file to exactly
// the samples encoded, and an 8-bit lossy one at its size and close to
// them.
func TestRoundTrip(t *testing.T) {
	djxl := testtool.Need(t, "djxl")
	const w, h = 83, 59
	p8, p16 := gradient(w, h)
	for _, o := range []Options{
		{Bits: 16, Lossless: true, Effort: 3, ICC: srgbICC(t), EXIF: []byte("MM\x00\x2a\x00\x00\x00\x08\x00\x00\x00\x00\x00\x00"), XMP: []byte("<x:xmpmeta xmlns:x='adobe:ns:meta/'/>")},
		{Bits: 8, Quality: 90, Effort: 3, ICC: srgbICC(t)},
	} {
		dir := t.TempDir()
		in, out := filepath.Join(dir, "a.jxl"), filepath.Join(dir, "a.png")
		var b bytes.Buffer
		encode(t, &b, w, h, o)
		if err := os.WriteFile(in, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		if msg, err := exec.Command(djxl, in, out).CombinedOutput(); err != nil {
			t.Fatalf("djxl: %v\n%s", err, msg)
		}
		f, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(bytes.NewReader(f))
		if err != nil {
			t.Fatal(err)
		}
		if img.Bounds() != image.Rect(0, 0, w, h) {
			t.Fatalf("%d bits: decoded %v, want %dx%d", o.Bits, img.Bounds(), w, h)
		}
		var sum float64
		diff := 0
		for y := range h {
			for x := range w {
				r, g, bl, _ := img.At(x, y).RGBA()
				i := 3 * (y*w + x)
				got := [3]uint32{r, g, bl}
				for k := range 3 {
					want := uint32(p16[i+k])
					if o.Bits == 8 {
						want = uint32(p8[i+k]) * 257
					}
					if got[k] != want {
						diff++
					}
					sum += math.Abs(float64(got[k]) - float64(want))
				}
			}
		}
		mean := sum / float64(3*w*h) / 65535
		switch {
		case o.Lossless && diff > 0:
			t.Errorf("lossless %d bits: %d samples differ (mean %.5f)", o.Bits, diff, mean)
		case !o.Lossless && mean > 0.01:
			t.Errorf("lossy %d bits: mean error %.4f of full scale", o.Bits, mean)
		}
	}
}

// TestErrors: bad options are refused, and the encoder refuses another
// thread.
func TestErrors(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	e, err := New(1)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	p8, p16 := gradient(4, 4)
	icc := srgbICC(t)
	for _, bad := range []Options{
		{Bits: 12, Quality: 90, Effort: 7, ICC: icc},
		{Bits: 8, Quality: 0, Effort: 7, ICC: icc},
		{Bits: 8, Quality: 90, Effort: 10, ICC: icc},
		{Bits: 8, Quality: 90, Effort: 7},
	} {
		if err := e.Encode(io.Discard, 4, 4, p8, p16, bad); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
	good := Options{Bits: 8, Quality: 90, Effort: 7, ICC: icc}
	if err := e.Encode(io.Discard, 4, 4, p8[:20], nil, good); err == nil {
		t.Error("short pixels: no error")
	}
	errc := make(chan error)
	go func() { errc <- e.Encode(io.Discard, 4, 4, p8, nil, good) }()
	if err := <-errc; err != ErrWrongThread {
		t.Errorf("other thread: %v, want ErrWrongThread", err)
	}
}

// peakHeap runs f and returns the C heap's peak growth over it, sampled
// every millisecond from another goroutine.
func peakHeap(f func()) int64 {
	before := cHeapInUse()
	var peak int64
	var mu sync.Mutex
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(time.Millisecond):
			}
			mu.Lock()
			peak = max(peak, cHeapInUse()-before)
			mu.Unlock()
		}
	}()
	f()
	close(done)
	mu.Lock()
	defer mu.Unlock()
	return peak
}

// TestWorkingBytes: on a textured image (a gradient with noise) the C
// heap's peak growth over an encode (sampled every millisecond) is
// matched by WorkingBytes within 0.7–1.5×, lossy and lossless.
func TestWorkingBytes(t *testing.T) {
	const w, h = 1000, 750
	icc := srgbICC(t)
	p8, p16 := gradient(w, h)
	r := rand.New(rand.NewSource(1))
	for i := range p8 {
		n := r.Intn(40)
		p8[i], p16[i] = uint8(min(255, int(p8[i])+n)), uint16(min(65535, int(p16[i])+n*256))
	}
	for _, o := range []Options{
		{Bits: 8, Quality: 90, Effort: DefaultEffort, ICC: icc},
		{Bits: 16, Lossless: true, Effort: DefaultEffort, ICC: icc},
	} {
		held := peakHeap(func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			e, err := New(2)
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			if err := e.Encode(io.Discard, w, h, p8, p16, o); err != nil {
				t.Fatal(err)
			}
		})
		est := WorkingBytes(w, h, o.Effort, o.Lossless)
		t.Logf("lossless %t: peak %d bytes (%.1f a pixel), estimate %d", o.Lossless, held, float64(held)/float64(w*h), est)
		if r := float64(est) / float64(held); r < 0.7 || r > 1.5 {
			t.Errorf("lossless %t: estimate %d bytes is %.2f× the peak %d (want 0.7..1.5)", o.Lossless, est, r, held)
		}
	}
}
