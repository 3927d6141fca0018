package libraw

import (
	"bytes"
	"errors"
	"image"
	"image/jpeg"
	"path/filepath"
	"runtime"
	"testing"
)

// thumbOf opens path on a locked thread and returns its preview, then
// checks that the raw data still unpacks after it.
func thumbOf(t *testing.T, path string) (Thumb, Info) {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	h, err := New()
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if err := h.Open(path); err != nil {
		t.Fatal(err)
	}
	th, err := h.Thumbnail()
	if err != nil {
		t.Fatalf("%s: Thumbnail: %v", path, err)
	}
	if err := h.Unpack(); err != nil {
		t.Fatalf("%s: Unpack after Thumbnail: %v", path, err)
	}
	return th, h.Info()
}

func TestThumbnailRealFiles(t *testing.T) {
	for _, tc := range []struct {
		file string
		// minimum width of the preview the file's largest one has
		// (exiftool -PreviewImage / -JpgFromRaw sizes: the 6D DNG's
		// PreviewImage is 1024 px wide, the D30's JpgFromRaw 1440 px).
		minW int
	}{
		{"canon_eos_6d.dng", 1000},
		{"canond30_CRW.CRW", 1400},
	} {
		t.Run(tc.file, func(t *testing.T) {
			th, in := thumbOf(t, filepath.Join(testdata, "raw", tc.file))
			if th.Format != ThumbJPEG {
				t.Fatalf("format %v, want JPEG", th.Format)
			}
			img, err := jpeg.Decode(bytes.NewReader(th.Data))
			if err != nil {
				t.Fatalf("preview does not decode as JPEG: %v", err)
			}
			b := img.Bounds()
			t.Logf("%s: %d previews, chosen %dx%d (LibRaw says %dx%d), raw visible %dx%d, %d bytes",
				tc.file, th.Count, b.Dx(), b.Dy(), th.Width, th.Height, in.Width, in.Height, len(th.Data))
			if b.Dx() < tc.minW {
				t.Fatalf("preview %dx%d: not the largest (want ≥ %d px wide)", b.Dx(), b.Dy(), tc.minW)
			}
			if !sameAspect(b, in.Width, in.Height, 0.05) {
				t.Fatalf("preview %dx%d has not the raw's aspect %dx%d", b.Dx(), b.Dy(), in.Width, in.Height)
			}
		})
	}
}

func sameAspect(b image.Rectangle, w, h int, tol float64) bool {
	a, r := float64(b.Dx())/float64(b.Dy()), float64(w)/float64(h)
	if a < 1 != (r < 1) {
		r = 1 / r
	}
	return a/r > 1-tol && a/r < 1+tol
}

func TestThumbnailWrongThread(t *testing.T) {
	runtime.LockOSThread()
	h, err := New()
	if err != nil {
		runtime.UnlockOSThread()
		t.Fatal(err)
	}
	if err := h.Open(filepath.Join(testdata, "raw", "canon_eos_6d.dng")); err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		_, err := h.Thumbnail()
		done <- err
	}()
	if err := <-done; !errors.Is(err, ErrWrongThread) {
		t.Fatalf("Thumbnail from another thread: %v, want ErrWrongThread", err)
	}
	h.Close()
	runtime.UnlockOSThread()
}

func TestThumbnailBeforeOpen(t *testing.T) {
	h := newHandle(t)
	if _, err := h.Thumbnail(); err == nil {
		t.Fatal("Thumbnail before Open succeeded")
	}
}
