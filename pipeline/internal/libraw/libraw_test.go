package libraw

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rawbatch/rawbatch/internal/rawerr"
	"github.com/rawbatch/rawbatch/internal/testtool"
)

const testdata = "../../../testdata"

func TestVersionIsReadAtRunTime(t *testing.T) {
	v := Version()
	if !strings.HasPrefix(v, ShortVersion()) {
		t.Fatalf("Version %q does not start with ShortVersion %q", v, ShortVersion())
	}
	n := VersionNumber()
	if n>>16 != 0 || (n>>8)&0xff < 18 {
		t.Fatalf("implausible LibRaw version number %#x", n)
	}
	if !ThreadSafe() {
		t.Fatalf("linked LibRaw %s is not libraw_r", LibraryPath())
	}
}

// decode runs the whole LibRaw sequence on a locked thread.
func decode(path string) (Info, []float32, int, int, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	h, err := New()
	if err != nil {
		return Info{}, nil, 0, 0, err
	}
	defer h.Close()
	if err := h.Open(path); err != nil {
		return Info{}, nil, 0, 0, err
	}
	in := h.Info()
	if err := h.Unpack(); err != nil {
		return in, nil, 0, 0, err
	}
	if err := h.Process(Params{Demosaic: AHD, WB: WBCamera}); err != nil {
		return in, nil, 0, 0, err
	}
	pix, w, hh, _, err := h.CopyImage(nil)
	return in, pix, w, hh, err
}

func TestDecodeRealFiles(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(testdata, "raw", "*"))
	if len(files) < 5 {
		t.Fatalf("expected the sample files in testdata/raw, found %d", len(files))
	}
	for _, f := range files {
		in, pix, w, h, err := decode(f)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if w != in.Width || h != in.Height || len(pix) != w*h*3 {
			t.Errorf("%s: processed %dx%d (%d samples), visible area %dx%d", f, w, h, len(pix), in.Width, in.Height)
		}
		var sum float64
		for _, v := range pix {
			sum += float64(v)
		}
		if mean := sum / float64(len(pix)); !(mean > 0.001 && mean < 1) {
			t.Errorf("%s: mean linear value %g is implausible", f, mean)
		}
	}
}

// TestBadFilesBecomeTypedErrors checks the one place where LibRaw's codes,
// its data-error callback and reads past the end of file become errors.
func TestBadFilesBecomeTypedErrors(t *testing.T) {
	dir := t.TempDir()
	half := filepath.Join(dir, "half.dng")
	b, err := os.ReadFile(filepath.Join(testdata, "raw", "canon550d_colorchart.dng"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(half, b[:len(b)/2], 0o644)
	cases := map[string]error{
		half: rawerr.ErrCorrupt,
		filepath.Join(testdata, "unsupported", "adobesdk_14_hdr_sdr_profiles.dng"): rawerr.ErrUnsupported,
		filepath.Join(testdata, "stubs", "filetype_fixture-sony-zv-e10.arw"):       rawerr.ErrUnsupported,
		filepath.Join(testdata, "stubs", "nomexif_canon-r6.cr3"):                   rawerr.ErrUnsupported,
		filepath.Join(testdata, "stubs", "exiftool_SigmaDP2.x3f"):                  rawerr.ErrUnsupported,
		filepath.Join(testdata, "stubs", "exiftool_Nikon.nef"):                     rawerr.ErrCorrupt, // data-error callback
		filepath.Join(testdata, "stubs", "exiftool_Panasonic.rw2"):                 rawerr.ErrCorrupt, // reads past the end
		filepath.Join(testdata, "stubs", "exiftool_CanonRaw.crw"):                  rawerr.ErrCorrupt,
	}
	if VersionNumber() >= 0x001500 {
		// LibRaw 0.21 decodes this DNG, and reads the CR3 stub (crx
		// 0x100, cut after its header) until it ends.
		cases[filepath.Join(testdata, "unsupported", "adobesdk_14_hdr_sdr_profiles.dng")] = nil
		cases[filepath.Join(testdata, "stubs", "nomexif_canon-r6.cr3")] = rawerr.ErrCorrupt
	}
	for path, want := range cases {
		_, _, _, _, err := decode(path)
		if want == nil {
			if err != nil {
				t.Errorf("%s: %v", filepath.Base(path), err)
			}
			continue
		}
		if !errors.Is(err, want) {
			t.Errorf("%s: got %v, want %v", filepath.Base(path), err, want)
			continue
		}
		if want == rawerr.ErrUnsupported && !strings.Contains(err.Error(), "not supported by LibRaw "+ShortVersion()) {
			t.Errorf("%s: %q does not name the LibRaw version", filepath.Base(path), err)
		}
		if want == rawerr.ErrUnsupported && errors.Is(err, rawerr.ErrCorrupt) {
			t.Errorf("%s: unsupported file also reported as corrupt", filepath.Base(path))
		}
	}
}

func TestHandleRefusesOtherThreads(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	h, err := New()
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	var wg sync.WaitGroup
	var other error
	wg.Add(1)
	go func() {
		defer wg.Done()
		runtime.LockOSThread() // a goroutine locked to a different thread
		defer runtime.UnlockOSThread()
		other = h.Open(filepath.Join(testdata, "raw", "canon_eos_6d.dng"))
	}()
	wg.Wait()
	if !errors.Is(other, ErrWrongThread) {
		t.Fatalf("Open from another thread: got %v, want ErrWrongThread", other)
	}
	if err := h.Open(filepath.Join(testdata, "raw", "canon_eos_6d.dng")); err != nil {
		t.Fatalf("Open on the owning thread: %v", err)
	}
}

// TestCancelDuringClose: Cancel, which any goroutine may call (a context's
// AfterFunc does), runs while the owner closes the handle and after it,
// without touching the freed C state (a data race under -race otherwise).
func TestCancelDuringClose(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for range 50 {
		h, err := New()
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			for range 100 {
				h.Cancel()
			}
		}()
		if err := h.Close(); err != nil {
			t.Fatal(err)
		}
		<-done
		h.Cancel()
	}
}

func TestOutputSizeMatchesRotation(t *testing.T) {
	// The iPhone stub's header says 4032x3024 with Orientation 6.
	h := openFile(t, filepath.Join(testdata, "stubs", "exiv2_IMG_1361_iphone12pro.dng"))
	w, hh, err := h.OutputSize()
	if err != nil || w != 3024 || hh != 4032 || h.Info().Flip != 6 {
		t.Fatalf("OutputSize = %dx%d, flip %d, err %v; want 3024x4032 flip 6", w, hh, h.Info().Flip, err)
	}
}

// TestIdentifyMatchesRawIdentify: Identify's output size is the "Output
// size" of raw-identify -v for every sample file and every stub LibRaw
// identifies.
func TestIdentifyMatchesRawIdentify(t *testing.T) {
	bin := testtool.Need(t, "raw-identify")
	files, _ := filepath.Glob(filepath.Join(testdata, "raw", "*"))
	stubs, _ := filepath.Glob(filepath.Join(testdata, "stubs", "*"))
	re := regexp.MustCompile(`Output size:\s*(\d+)\s*x\s*(\d+)`)
	n := 0
	for _, f := range append(files, stubs...) {
		out, _ := exec.Command(bin, "-v", f).CombinedOutput()
		m := re.FindSubmatch(out)
		_, w, h, err := Identify(f)
		if m == nil {
			if err == nil {
				t.Errorf("%s: LibRaw's raw-identify fails but Identify succeeds", f)
			}
			continue
		}
		n++
		if err != nil || fmt.Sprint(w) != string(m[1]) || fmt.Sprint(h) != string(m[2]) {
			t.Errorf("%s: Identify %dx%d (%v), raw-identify %sx%s", f, w, h, err, m[1], m[2])
		}
	}
	if n < 10 {
		t.Errorf("only %d files identified", n)
	}
}

// TestOpenLoopOnTruncatedFileEnds: LibRaw 0.20's IIQ parser loops forever
// reading at end of file on exiftool_PhaseOne.iiq cut to 1800 bytes; the
// binding's datastream ends it with LibRaw's end-of-file exception, which
// becomes ErrCorrupt.
func TestOpenLoopOnTruncatedFileEnds(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(testdata, "stubs", "exiftool_PhaseOne.iiq"))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "cut.iiq")
	if err := os.WriteFile(p, b[:1800], 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, _, _, err := Identify(p)
		done <- err
	}()
	select {
	case err := <-done:
		// LibRaw 0.21 stops earlier and refuses the cut file.
		if !errors.Is(err, rawerr.ErrCorrupt) && !(VersionNumber() >= 0x001500 && errors.Is(err, rawerr.ErrUnsupported)) {
			t.Fatalf("got %v, want ErrCorrupt", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("LibRaw's open did not return within 20 s")
	}
}

// LibRaw's codes on damaged data become corrupt: rawbatch calls LibRaw in
// order, so an out-of-order call or an unspecified error is the file's.
// Running out of memory stays a plain error.
func TestCodeKinds(t *testing.T) {
	for rc, want := range map[int]error{
		codeOutOfOrder: rawerr.ErrCorrupt, codeUnspecified: rawerr.ErrCorrupt, codeInputClosed: rawerr.ErrCorrupt,
		codeMempoolOverflow: rawerr.ErrCorrupt, codeDataError: rawerr.ErrCorrupt, codeIOError: rawerr.ErrCorrupt,
		codeNoImage: rawerr.ErrCorrupt, codeTooBig: rawerr.ErrCorrupt, codeBadCrop: rawerr.ErrCorrupt,
		codeUnsupported: rawerr.ErrUnsupported, codeNotImplemented: rawerr.ErrUnsupported,
		codeCancelled: ErrCancelled, codeNoMemory: nil,
	} {
		if got := codeKind(rc); got != want {
			t.Errorf("code %d: kind %v, want %v", rc, got, want)
		}
	}
	e := &Error{Op: "unpack", Code: codeOutOfOrder, Msg: "Out of order call of libraw function", kind: codeKind(codeOutOfOrder)}
	if rawerr.Kind(e) != "corrupt" || !strings.Contains(e.Error(), "Out of order call") {
		t.Errorf("out of order call: %q, kind %s", e, rawerr.Kind(e))
	}
}
