package jpegturbo

import (
	"bytes"
	"errors"
	"image"
	"image/jpeg"
	"io"
	"math"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// gradient fills row y of a w-pixel RGB image with smooth colour ramps.
func gradient(w, h int) func(y int, dst []byte) {
	return func(y int, dst []byte) {
		for x := range w {
			dst[3*x] = uint8(255 * x / max(1, w-1))
			dst[3*x+1] = uint8(255 * y / max(1, h-1))
			dst[3*x+2] = uint8(128 + 100*math.Sin(float64(x+y)/17))
		}
	}
}

// encode compresses a w×h image from rows with o and markers on a locked
// thread, as the encode package does.
func encode(w io.Writer, wd, ht int, o Options, markers []Marker, rows func(y int, dst []byte)) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c, err := New()
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.Start(w, wd, ht, o, markers); err != nil {
		return err
	}
	if err := writeAll(c, wd, ht, rows); err != nil {
		return err
	}
	return c.Finish()
}

// writeAll writes the ht rows of a started wd-pixel-wide image, made by
// rows, MaxRows at a time.
func writeAll(c *Compressor, wd, ht int, rows func(y int, dst []byte)) error {
	buf := make([]byte, MaxRows*3*wd)
	for y := 0; y < ht; y += MaxRows {
		n := min(MaxRows, ht-y)
		for i := range n {
			rows(y+i, buf[i*3*wd:(i+1)*3*wd])
		}
		if err := c.WriteRows(buf, n, 3*wd); err != nil {
			return err
		}
	}
	return nil
}

// psnrRGB is the PSNR in dB of the decoded img against rows.
func psnrRGB(img image.Image, rows func(y int, dst []byte)) float64 {
	b := img.Bounds()
	row := make([]byte, 3*b.Dx())
	var se float64
	for y := range b.Dy() {
		rows(y, row)
		for x := range b.Dx() {
			r, g, bb, _ := img.At(b.Min.X+x, b.Min.Y+y).RGBA()
			for c, v := range []uint32{r >> 8, g >> 8, bb >> 8} {
				d := float64(v) - float64(row[3*x+c])
				se += d * d
			}
		}
	}
	mse := se / float64(3*b.Dx()*b.Dy())
	return 10 * math.Log10(255*255/mse)
}

func TestCompressDecodes(t *testing.T) {
	const w, h = 123, 77 // not whole MCUs
	rows := gradient(w, h)
	app := Marker{Code: 0xE1, Data: []byte("Exif\x00\x00hello")}
	var buf bytes.Buffer
	if err := encode(&buf, w, h, Options{Quality: 92, HSamp: 2, VSamp: 2}, []Marker{app}, rows); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	// SOI, then the marker as given (no JFIF APP0 before it).
	want := append([]byte{0xFF, 0xD8, 0xFF, 0xE1, 0, byte(2 + len(app.Data))}, app.Data...)
	if !bytes.HasPrefix(b, want) {
		t.Errorf("file starts % x, want % x", b[:min(len(b), len(want))], want)
	}
	img, err := jpeg.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if img.Bounds().Dx() != w || img.Bounds().Dy() != h {
		t.Fatalf("decoded %v", img.Bounds())
	}
	if p := psnrRGB(img, rows); p < 38 {
		t.Errorf("PSNR %.1f dB < 38", p)
	}
}

func TestCompressErrors(t *testing.T) {
	var buf bytes.Buffer
	rows := gradient(16, 16)
	for _, o := range []Options{{Quality: 0, HSamp: 1, VSamp: 1}, {Quality: 101, HSamp: 1, VSamp: 1}, {Quality: 90, HSamp: 1, VSamp: 2}, {Quality: 90, HSamp: 4, VSamp: 1}} {
		if err := encode(&buf, 16, 16, o, nil, rows); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
	for _, m := range []Marker{{Code: 0xDB}, {Code: 0xE2, Data: make([]byte, 65534)}} {
		if err := encode(&buf, 16, 16, Options{Quality: 90, HSamp: 1, VSamp: 1}, []Marker{m}, rows); err == nil {
			t.Errorf("marker %#x of %d bytes accepted", m.Code, len(m.Data))
		}
	}
	if err := encode(&buf, 0, 16, Options{Quality: 90, HSamp: 1, VSamp: 1}, nil, rows); err == nil {
		t.Error("width 0 accepted")
	}

	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c, err := New()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.WriteRows(make([]byte, 48), 1, 48); err == nil {
		t.Error("WriteRows before Start accepted")
	}
	if err := c.Start(&buf, 16, 16, Options{Quality: 90, HSamp: 1, VSamp: 1}, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.WriteRows(make([]byte, 40), 1, 48); err == nil {
		t.Error("short row buffer accepted")
	}
	if err := c.Finish(); err == nil || !strings.Contains(err.Error(), "0 of 16 rows") {
		t.Errorf("Finish without rows: %v", err)
	}
	// The compressor is usable again after a failed image.
	buf.Reset()
	if err := c.Start(&buf, 16, 1, Options{Quality: 90, HSamp: 1, VSamp: 1}, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.WriteRows(make([]byte, 48), 1, 48); err != nil {
		t.Fatal(err)
	}
	if err := c.Finish(); err != nil {
		t.Fatal(err)
	}
	if _, err := jpeg.Decode(&buf); err != nil {
		t.Errorf("image after a failed one: %v", err)
	}
}

// TestWrongThread: a compressor refuses calls from another OS thread.
func TestWrongThread(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c, err := New()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	done := make(chan error)
	go func() {
		runtime.LockOSThread() // a locked goroutine never shares the test's thread
		defer runtime.UnlockOSThread()
		done <- c.Start(io.Discard, 8, 8, Options{Quality: 90, HSamp: 1, VSamp: 1}, nil)
	}()
	if err := <-done; !errors.Is(err, ErrWrongThread) {
		t.Errorf("Start from another thread: %v", err)
	}
	if err := c.Start(io.Discard, 8, 8, Options{Quality: 90, HSamp: 2, VSamp: 1}, nil); err != nil {
		t.Fatal(err)
	}
	ok := make(chan bool)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		_, _, sampled := c.Sampling(0)
		ok <- sampled
	}()
	if <-ok {
		t.Error("Sampling from another thread answered")
	}
	if h, v, sampled := c.Sampling(0); !sampled || h != 2 || v != 1 {
		t.Errorf("Sampling(0) on the compressor's thread: %d×%d, %v", h, v, sampled)
	}
}

type failAfter struct{ n int }

var errDisk = errors.New("disk full")

func (f *failAfter) Write(p []byte) (int, error) {
	if len(p) > f.n {
		return 0, errDisk
	}
	f.n -= len(p)
	return len(p), nil
}

type panicWriter struct{}

func (panicWriter) Write([]byte) (int, error) { panic("boom") }

// TestWriterFails: a writer failing at any point (at the markers, in the
// middle of the data, at the end) gives its error back through libjpeg's
// error exit, without a crash, and without a leak over many failures.
func TestWriterFails(t *testing.T) {
	const w, h = 256, 200
	rows := gradient(w, h)
	var full bytes.Buffer
	if err := encode(&full, w, h, Options{Quality: 90, HSamp: 1, VSamp: 1}, nil, rows); err != nil {
		t.Fatal(err)
	}
	try := func(n int) {
		t.Helper()
		err := encode(&failAfter{n: n}, w, h, Options{Quality: 90, HSamp: 1, VSamp: 1}, []Marker{{Code: 0xE2, Data: make([]byte, 65000)}, {Code: 0xE2, Data: make([]byte, 65000)}}, rows)
		if !errors.Is(err, errDisk) {
			t.Fatalf("writer failing after %d bytes: %v", n, err)
		}
	}
	for _, n := range []int{0, 1, 1 << 16, 1<<16 + 1, 130000 + full.Len()/2, 130000 + full.Len() - 10} {
		try(n)
	}
	if err := encode(panicWriter{}, w, h, Options{Quality: 90, HSamp: 1, VSamp: 1}, nil, rows); err == nil || !strings.Contains(err.Error(), "panicked: boom") {
		t.Errorf("panicking writer: %v", err)
	}
	// No C memory kept by failed compressions.
	for range 20 {
		try(70000)
	}
	before := cHeapInUse()
	for i := range 300 {
		try(i * 450) // the file is 138 kB: every try fails somewhere
	}
	if grown := cHeapInUse() - before; grown > 1<<20 {
		t.Errorf("C heap grew by %d bytes over 300 failed compressions", grown)
	}
}

// TestWorkingBytes: WorkingBytes is within 10 % of the C heap that a
// compression holds before Finish, at each sampling.
func TestWorkingBytes(t *testing.T) {
	const w, h = 2000, 1500
	rows := gradient(w, h)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for _, s := range [][2]int{{1, 1}, {2, 1}, {2, 2}} {
		c, err := New()
		if err != nil {
			t.Fatal(err)
		}
		before := cHeapInUse()
		if err := c.Start(io.Discard, w, h, Options{Quality: 90, HSamp: s[0], VSamp: s[1]}, nil); err != nil {
			t.Fatal(err)
		}
		if err := writeAll(c, w, h, rows); err != nil {
			t.Fatal(err)
		}
		held := cHeapInUse() - before
		if err := c.Finish(); err != nil {
			t.Fatal(err)
		}
		c.Close()
		est := WorkingBytes(w, h, s[0], s[1])
		if d := math.Abs(float64(est-held)) / float64(held); d > 0.1 {
			t.Errorf("sampling %d×%d: estimate %d bytes, held %d (%.0f %% off)", s[0], s[1], est, held, 100*d)
		}
		t.Logf("sampling %d×%d: %d bytes held (%.2f per pixel), estimate %d", s[0], s[1], held, float64(held)/(w*h), est)
	}
}

// TestStandardTablesHoldNoImage: an image of more than OptimizeMaxPixels
// gets the standard Huffman tables, so libjpeg holds no whole-image
// coefficient buffer (it would be 6 bytes a pixel at 4:4:4), and the
// file decodes to the image.
func TestStandardTablesHoldNoImage(t *testing.T) {
	const w, h = 2600, 1700
	if Optimized(w, h) || !Optimized(2048, 2048) {
		t.Fatalf("Optimized(%d, %d) = %v, Optimized(2048, 2048) = %v", w, h, Optimized(w, h), Optimized(2048, 2048))
	}
	rows := gradient(w, h)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c, err := New()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var out bytes.Buffer
	before := cHeapInUse()
	if err := c.Start(&out, w, h, Options{Quality: 90, HSamp: 1, VSamp: 1}, nil); err != nil {
		t.Fatal(err)
	}
	if err := writeAll(c, w, h, rows); err != nil {
		t.Fatal(err)
	}
	held := cHeapInUse() - before
	if err := c.Finish(); err != nil {
		t.Fatal(err)
	}
	if est := WorkingBytes(w, h, 1, 1); held > est || est > 1<<20 {
		t.Errorf("held %d bytes before Finish, estimate %d: want no coefficient buffer (%d bytes)", held, est, 6*w*h)
	}
	img, err := jpeg.Decode(&out)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != w || b.Dy() != h {
		t.Fatalf("decoded %v", b)
	}
}

// TestParallel: compressors on several goroutines at once keep their
// images apart.
func TestParallel(t *testing.T) {
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	outs := make([]bytes.Buffer, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w, h := 100+13*i, 60+7*i
			errs[i] = encode(&outs[i], w, h, Options{Quality: 90, HSamp: 1 + i%2, VSamp: 1 + i%2}, nil, gradient(w, h))
		}()
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("encoder %d: %v", i, errs[i])
		}
		img, err := jpeg.Decode(&outs[i])
		if err != nil {
			t.Fatalf("encoder %d: %v", i, err)
		}
		w, h := 100+13*i, 60+7*i
		if img.Bounds().Dx() != w || img.Bounds().Dy() != h {
			t.Errorf("encoder %d: %v, want %d×%d", i, img.Bounds(), w, h)
		}
		if p := psnrRGB(img, gradient(w, h)); p < 35 {
			t.Errorf("encoder %d: PSNR %.1f dB", i, p)
		}
	}
}

func TestVersion(t *testing.T) {
	v := Version()
	if !strings.HasPrefix(v, "libjpeg-turbo version ") && v == "" {
		t.Errorf("Version() = %q", v)
	}
	if !strings.Contains(LibraryPath(), "libjpeg") {
		t.Errorf("LibraryPath() = %q", LibraryPath())
	}
	if APIVersion() < 62 {
		t.Errorf("APIVersion() = %d", APIVersion())
	}
	t.Logf("%s, API %d, %s", v, APIVersion(), LibraryPath())
}

// TestGray: a Gray compression writes a one-component JPEG (the gain map
// of an Ultra HDR file) that image/jpeg reads as *image.Gray at its size,
// within 2 code values at quality 95; it takes width bytes a row, and
// refuses chroma subsampling.
func TestGray(t *testing.T) {
	const w, h = 50, 37
	val := func(x, y int) uint8 { return uint8(40 + 2*x + 2*y) }
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c, err := New()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Start(io.Discard, w, h, Options{Quality: 95, HSamp: 2, VSamp: 2, Gray: true}, nil); err == nil {
		t.Error("a greyscale image with 4:2:0 sampling was accepted")
	}
	var out bytes.Buffer
	if err := c.Start(&out, w, h, Options{Quality: 95, HSamp: 1, VSamp: 1, Gray: true}, nil); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, MaxRows*w)
	for y := 0; y < h; y += MaxRows {
		n := min(MaxRows, h-y)
		for i := range n {
			for x := range w {
				buf[i*w+x] = val(x, y+i)
			}
		}
		if err := c.WriteRows(buf, n, w); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Finish(); err != nil {
		t.Fatal(err)
	}
	img, err := jpeg.Decode(&out)
	if err != nil {
		t.Fatal(err)
	}
	g, ok := img.(*image.Gray)
	if !ok || g.Bounds() != image.Rect(0, 0, w, h) {
		t.Fatalf("decoded %T %v, want *image.Gray %d×%d", img, img.Bounds(), w, h)
	}
	for y := range h {
		for x := range w {
			if d := int(g.GrayAt(x, y).Y) - int(val(x, y)); d < -2 || d > 2 {
				t.Fatalf("pixel (%d,%d): %d, want %d ± 2", x, y, g.GrayAt(x, y).Y, val(x, y))
			}
		}
	}
}
