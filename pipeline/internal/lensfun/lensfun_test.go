package lensfun

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// testDB opens the system database and testdata/lensfun on a locked
// thread (the caller's test goroutine).
func testDB(t *testing.T) *DB {
	t.Helper()
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
	d, err := Open("../../../testdata/lensfun")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Error(err)
		}
	})
	return d
}

func findTest(t *testing.T, d *DB, lens string) (*Camera, *Lens) {
	t.Helper()
	cam, err := d.FindCamera("Rawbatch", "Lens Chart")
	if err != nil || cam == nil {
		t.Fatalf("camera: %v, %v", cam, err)
	}
	if cam.CropFactor != 1.5 || cam.Mount != "Rawbatch Mount" {
		t.Fatalf("camera %+v", cam)
	}
	l, err := d.FindLens(cam, "", lens)
	if err != nil || l == nil {
		t.Fatalf("lens %q: %v, %v", lens, l, err)
	}
	if l.Model != lens {
		t.Fatalf("lens %q found as %q", lens, l.Model)
	}
	return cam, l
}

const w, h = 600, 400

// TestDistortionCoordinates: the poly3 profile (k1 = −0.03) gives the
// positions r_d = r_u·(1 − k1 + k1·r_u²), r normalised to half the short
// side, the same for the three channels (lensfun 0.3.3's row call mixes
// neighbouring pixels' channels up: rb_lf_subpixel_rows).
func TestDistortionCoordinates(t *testing.T) {
	d := testDB(t)
	cam, l := findTest(t, d, "Rawbatch Barrel 24mm f/2.8")
	if l.Has != Distortion {
		t.Fatalf("calibrations %v", l.Has)
	}
	m, err := d.NewModifier(l, cam.CropFactor, w, h, 24, 2.8, 1000, Distortion|TCA|Vignetting, false)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if m.Applied != Distortion || m.Scale != 1 {
		t.Fatalf("applied %v, scale %g", m.Applied, m.Scale)
	}
	buf := make([]float32, w*6*2)
	cx, cy, ns := float64(w-1)/2, float64(h-1)/2, float64(h-1)/2
	var worst, spread float64
	for y := 0; y < h; y += 2 {
		if err := m.Coordinates(buf, y, 2); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 2*w; i++ {
			x, yy := i%w, y+i/w
			p := buf[i*6 : i*6+6]
			xu, yu := (float64(x)-cx)/ns, (float64(yy)-cy)/ns
			k := 1.03 - 0.03*(xu*xu+yu*yu)
			worst = math.Max(worst, math.Hypot(float64(p[2])-(cx+xu*k*ns), float64(p[3])-(cy+yu*k*ns)))
			for c := 0; c < 3; c += 2 {
				spread = math.Max(spread, math.Hypot(float64(p[2*c]-p[2]), float64(p[2*c+1]-p[3])))
			}
		}
	}
	t.Logf("largest distance from the poly3 formula %.4f px, between channels %.5f px", worst, spread)
	if worst > 0.05 || spread > 1e-3 {
		t.Errorf("positions off the poly3 formula by %.4f px, channels apart by %.5f px", worst, spread)
	}
}

// TestAutoScale: with auto-scale a barrel correction is enlarged so that
// every output pixel's source lies inside the image.
func TestAutoScale(t *testing.T) {
	d := testDB(t)
	cam, l := findTest(t, d, "Rawbatch Barrel 24mm f/2.8")
	m, err := d.NewModifier(l, cam.CropFactor, w, h, 24, 2.8, 1000, Distortion, true)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if !(m.Scale > 1) {
		t.Fatalf("scale %g, want > 1 for barrel distortion", m.Scale)
	}
	buf := make([]float32, w*6)
	for _, y := range []int{0, h / 2, h - 1} {
		m.Coordinates(buf, y, 1)
		for i := 0; i < len(buf); i += 2 {
			if buf[i] < -0.5 || buf[i] > w-0.5 || buf[i+1] < -0.5 || buf[i+1] > h-0.5 {
				t.Fatalf("row %d: source (%g, %g) outside the image", y, buf[i], buf[i+1])
			}
		}
	}
}

// TestTCACoordinates: the linear TCA profile moves red by kr = 1.001 and
// blue by kb = 0.999 about the centre, green not at all.
func TestTCACoordinates(t *testing.T) {
	d := testDB(t)
	cam, l := findTest(t, d, "Rawbatch TCA 35mm f/4")
	m, err := d.NewModifier(l, cam.CropFactor, w, h, 35, 4, 1000, Distortion|TCA, false)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if m.Applied != TCA {
		t.Fatalf("applied %v", m.Applied)
	}
	buf := make([]float32, w*6)
	cx, cy := float64(w-1)/2, float64(h-1)/2
	var worst float64
	for _, y := range []int{0, 57, h - 1} {
		m.Coordinates(buf, y, 1)
		for x := 0; x < w; x++ {
			p := buf[x*6:]
			for c, k := range []float64{1.001, 1, 0.999} {
				ex, ey := cx+k*(float64(x)-cx), cy+k*(float64(y)-cy)
				worst = math.Max(worst, math.Hypot(float64(p[2*c])-ex, float64(p[2*c+1])-ey))
			}
		}
	}
	if worst > 0.002 {
		t.Errorf("TCA positions off by %.4f px", worst)
	}
}

// TestDevignette: the pa profile (k1, k2, k3 = −0.5, 0.15, −0.05) divides
// by 1 + k1·r² + k2·r⁴ + k3·r⁶, r = 1 at the corners: gain 1/0.6 there, 1
// in the centre.
func TestDevignette(t *testing.T) {
	d := testDB(t)
	cam, l := findTest(t, d, "Rawbatch Vignette 50mm f/2")
	m, err := d.NewModifier(l, cam.CropFactor, w, h, 50, 2, 1000, Vignetting|Distortion, false)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if m.Applied != Vignetting {
		t.Fatalf("applied %v", m.Applied)
	}
	row := func(y int) []float32 {
		px := make([]float32, w*3)
		for i := range px {
			px[i] = 0.5
		}
		if err := m.Devignette(px, y, 1); err != nil {
			t.Fatal(err)
		}
		return px
	}
	top, mid := row(0), row(h/2)
	if g := top[0] / 0.5; math.Abs(float64(g)-1/0.6) > 0.01 {
		t.Errorf("corner gain %g, want %g", g, 1/0.6)
	}
	if g := mid[(w/2)*3+1] / 0.5; math.Abs(float64(g)-1) > 0.001 {
		t.Errorf("centre gain %g, want 1", g)
	}
	if top[0] != top[1] || top[1] != top[2] {
		t.Errorf("channels differ: %v", top[:3])
	}
}

func TestNotFound(t *testing.T) {
	d := testDB(t)
	if c, err := d.FindCamera("Nobody", "No Such Camera 9000"); c != nil || err != nil {
		t.Errorf("camera %+v, %v", c, err)
	}
	cam, _ := findTest(t, d, "Rawbatch TCA 35mm f/4")
	if l, err := d.FindLens(cam, "", "Zeiss Otus 85mm f/1.4"); l != nil || err != nil {
		t.Errorf("a lens of another mount: %+v, %v", l, err)
	}
	if l, err := d.FindLens(cam, "", ""); l != nil || err != nil {
		t.Errorf("no name: %+v, %v", l, err)
	}
}

// TestSystemDatabase: the Debian database knows a common lens.
func TestSystemDatabase(t *testing.T) {
	d := testDB(t)
	cam, err := d.FindCamera("Canon", "Canon EOS 6D")
	if err != nil || cam == nil {
		t.Fatalf("Canon EOS 6D: %v, %v", cam, err)
	}
	l, err := d.FindLens(cam, "", "EF24-105mm f/4L IS USM")
	if err != nil || l == nil || l.Has&Distortion == 0 || l.Model != "Canon EF 24-105mm f/4L IS USM" {
		t.Fatalf("EF24-105mm f/4L IS USM: %+v, %v", l, err)
	}
	t.Logf("%s (crop %g): %s, %v", cam.Model, cam.CropFactor, l.Name(), l.Has)
}

func TestOpenErrors(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if _, err := Open(filepath.Join(t.TempDir(), "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing directory: %v", err)
	}
	if _, err := Open(t.TempDir()); err == nil {
		t.Errorf("a directory without XML files: no error")
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "bad.xml"), []byte("<lensdatabase version=\"1\"><camera><maker>x</camera>"), 0o644)
	if _, err := Open(dir); !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "was closed") {
		t.Errorf("bad XML: %v", err)
	}
}

// TestOwnerThread: a call from another OS thread is refused, Close
// included, and the database stays usable on its own thread.
func TestOwnerThread(t *testing.T) {
	d := testDB(t)
	cam, lens := findTest(t, d, "Rawbatch Barrel 24mm f/2.8")
	m, err := d.NewModifier(lens, cam.CropFactor, w, h, 24, 2.8, 1000, Distortion, false)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	errc := make(chan error)
	for _, call := range []struct {
		name string
		f    func() error
	}{
		{"FindCamera", func() error { _, err := d.FindCamera("Rawbatch", "Lens Chart"); return err }},
		{"Modifier.Close", m.Close},
		{"DB.Close", d.Close},
	} {
		go func() {
			runtime.LockOSThread() // a locked goroutine never shares the test's thread
			defer runtime.UnlockOSThread()
			errc <- call.f()
		}()
		if err := <-errc; err == nil {
			t.Errorf("%s on another thread: no error", call.name)
		}
	}
	if c, err := d.FindCamera("Rawbatch", "Lens Chart"); err != nil || c == nil {
		t.Errorf("after the refused calls: camera %v, %v", c, err)
	}
	if err := m.Points(make([]float32, 6), []float32{1, 1}); err != nil {
		t.Errorf("modifier after the refused Close: %v", err)
	}
}

// TestParallelOpen: databases loaded and used on several threads at once
// (the in-process runner converts several files at once) do not crash.
func TestParallelOpen(t *testing.T) {
	const n = 8
	errc := make(chan error, n)
	for range n {
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			for range 6 {
				d, err := Open("../../../testdata/lensfun")
				if err != nil {
					errc <- err
					return
				}
				cam, err := d.FindCamera("Rawbatch", "Lens Chart")
				if err == nil && cam == nil {
					err = errors.New("camera not found")
				}
				d.Close()
				if err != nil {
					errc <- err
					return
				}
			}
			errc <- nil
		}()
	}
	for range n {
		if err := <-errc; err != nil {
			t.Error(err)
		}
	}
}

// TestSharedDatabase: the database is loaded once for the handles of the
// same directories, one after another or at once, and again when a file
// of them changed; a closed handle leaves it loaded for the next, and
// CloseShared destroys it once no handle is open.
func TestSharedDatabase(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	dir := t.TempDir()
	src, err := os.ReadFile("../../../testdata/lensfun/rawbatch-test.xml")
	if err != nil {
		t.Skip(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a.xml"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	before := loads
	d1, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	d2, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	d1.Close()
	d3, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if n := loads - before; n != 1 {
		t.Errorf("%d loads for three handles of one directory, want 1", n)
	}
	if c, err := d2.FindCamera("Rawbatch", "Lens Chart"); err != nil || c == nil {
		t.Errorf("through a shared handle: camera %v, %v", c, err)
	}
	if err := CloseShared(); err == nil {
		t.Error("CloseShared with handles open: no error")
	}
	// A changed file is loaded again; the handles of the old load keep it
	// until they close.
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(filepath.Join(dir, "a.xml"), later, later); err != nil {
		t.Fatal(err)
	}
	d4, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if n := loads - before; n != 2 {
		t.Errorf("%d loads after the file changed, want 2", n)
	}
	if c, err := d3.FindCamera("Rawbatch", "Lens Chart"); err != nil || c == nil {
		t.Errorf("through a handle of the old load: camera %v, %v", c, err)
	}
	d2.Close()
	d3.Close()
	d4.Close()
	if err := CloseShared(); err != nil {
		t.Error(err)
	}
}
