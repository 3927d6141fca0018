package avif

import (
	"bytes"
	"image"
	"image/png"
	"math"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rawbatch/rawbatch/internal/testtool"
)

// gradient returns a w×h RGB image at depth bits: 8-bit bytes or uint16.
func gradient(w, h, depth int) ([]byte, []uint16) {
	top := float64(int(1)<<depth - 1)
	p8, p16 := make([]byte, 3*w*h), make([]uint16, 3*w*h)
	for y := range h {
		for x := range w {
			i := 3 * (y*w + x)
			c := [3]float64{float64(x) / float64(w), float64(y) / float64(h), float64(x+y) / float64(w+h)}
			for k, v := range c {
				p8[i+k] = uint8(math.Round(v * 255))
				p16[i+k] = uint16(math.Round(v * top))
			}
		}
	}
	return p8, p16
}

func encode(t *testing.T, w, h int, o Options) []byte {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	e, err := New()
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	p8, p16 := gradient(w, h, o.Depth)
	var out []byte
	if o.Depth == 8 {
		out, err = e.Encode(w, h, p8, nil, 3*w, o)
	} else {
		out, err = e.Encode(w, h, nil, p16, 3*w, o)
	}
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRoundTrip: Debian's avifdec decodes 8, 10 and 12-bit files at each
// subsampling to the encoded size and close to the encoded samples, and
// its --info names the CICP given.
func TestRoundTrip(t *testing.T) {
	avifdec := testtool.Need(t, "avifdec")
	const w, h = 97, 61
	for _, o := range []Options{
		{Depth: 8, YUV: 444, Quality: 90, Speed: 8, Primaries: PrimariesBT709, Transfer: TransferSRGB, Matrix: MatrixBT601, FullRange: true},
		{Depth: 10, YUV: 420, Quality: 80, Speed: 8, Primaries: PrimariesBT2020, Transfer: TransferPQ, Matrix: MatrixBT2020NCL, FullRange: true},
		{Depth: 12, YUV: 422, Quality: 95, Speed: 8, Primaries: PrimariesBT2020, Transfer: TransferHLG, Matrix: MatrixBT2020NCL, FullRange: true},
	} {
		dir := t.TempDir()
		in, out := filepath.Join(dir, "a.avif"), filepath.Join(dir, "a.png")
		if err := os.WriteFile(in, encode(t, w, h, o), 0o644); err != nil {
			t.Fatal(err)
		}
		info, err := exec.Command(avifdec, "--info", in).CombinedOutput()
		if err != nil {
			t.Fatalf("avifdec --info: %v\n%s", err, info)
		}
		for _, want := range []string{"Bit Depth      : " + strconv.Itoa(o.Depth), "Color Primaries: " + strconv.Itoa(o.Primaries), "Transfer Char. : " + strconv.Itoa(o.Transfer), "Range          : Full"} {
			if !strings.Contains(string(info), want) {
				t.Errorf("depth %d: avifdec --info lacks %q:\n%s", o.Depth, want, info)
			}
		}
		if b, err := exec.Command(avifdec, "--depth", "16", in, out).CombinedOutput(); err != nil {
			t.Fatalf("avifdec: %v\n%s", err, b)
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
			t.Fatalf("depth %d: decoded %v, want %dx%d", o.Depth, img.Bounds(), w, h)
		}
		// Mean error against the gradient, in 16-bit units.
		_, p16 := gradient(w, h, 16)
		var sum float64
		for y := range h {
			for x := range w {
				r, g, b, _ := img.At(x, y).RGBA()
				i := 3 * (y*w + x)
				sum += math.Abs(float64(r)-float64(p16[i])) + math.Abs(float64(g)-float64(p16[i+1])) + math.Abs(float64(b)-float64(p16[i+2]))
			}
		}
		if mean := sum / float64(3*w*h) / 65535; mean > 0.01 {
			t.Errorf("depth %d: mean error %.4f of full scale", o.Depth, mean)
		}
	}
}

// TestErrors: bad options are refused before libavif runs, and the
// encoder refuses another thread.
func TestErrors(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	e, err := New()
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	p8, _ := gradient(4, 4, 8)
	good := Options{Depth: 8, YUV: 444, Quality: 90, Speed: 6}
	for _, bad := range []Options{
		{Depth: 9, YUV: 444, Quality: 90, Speed: 6},
		{Depth: 8, YUV: 411, Quality: 90, Speed: 6},
		{Depth: 8, YUV: 444, Quality: 0, Speed: 6},
		{Depth: 8, YUV: 444, Quality: 90, Speed: 11},
	} {
		if _, err := e.Encode(4, 4, p8, nil, 12, bad); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
	if _, err := e.Encode(4, 4, p8[:20], nil, 12, good); err == nil {
		t.Error("short pixels: no error")
	}
	errc := make(chan error)
	go func() {
		_, err := e.Encode(4, 4, p8, nil, 12, good)
		errc <- err
	}()
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
// 1–2.5× WorkingBytes: aom allocates more than it touches, and
// WorkingBytes counts what becomes resident (calibrated on whole
// conversions' peak RSS in pipeline's TestEstimateCalibrationWholeFrame).
func TestWorkingBytes(t *testing.T) {
	const w, h = 1200, 800
	for _, o := range []Options{
		{Depth: 8, YUV: 444, Quality: 90, Speed: 6, Threads: 2, Matrix: MatrixBT601},
		{Depth: 10, YUV: 420, Quality: 80, Speed: 6, Threads: 2, Matrix: MatrixBT601},
	} {
		p8, p16 := gradient(w, h, o.Depth)
		r := rand.New(rand.NewSource(1))
		for i := range p8 {
			n := r.Intn(40)
			p8[i], p16[i] = uint8(min(255, int(p8[i])+n)), uint16(min(1<<o.Depth-1, int(p16[i])+n<<(o.Depth-8)))
		}
		held := peakHeap(func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			e, err := New()
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			if _, err := e.Encode(w, h, p8, p16, 3*w, o); err != nil {
				t.Fatal(err)
			}
		})
		est := WorkingBytes(w, h, o.Depth, o.YUV)
		t.Logf("depth %d %d: peak %d bytes (%.1f a pixel), estimate %d", o.Depth, o.YUV, held, float64(held)/float64(w*h), est)
		if r := float64(held) / float64(est); r < 1 || r > 2.5 {
			t.Errorf("depth %d %d: C heap peak %d is %.2f× the estimate %d (want 1..2.5)", o.Depth, o.YUV, held, r, est)
		}
	}
}

// TestCodec: libavif has an AV1 encoder.
func TestCodec(t *testing.T) {
	if Codec() == "" {
		t.Fatal("libavif has no AV1 encoder")
	}
	t.Logf("libavif %s, AV1 encoder %s", Version(), Codec())
}
