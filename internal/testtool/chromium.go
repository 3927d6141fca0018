package testtool

import (
	"context"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// chromiumTimeout bounds one headless Chromium run: a page of local files
// renders in well under a second, but the first start on a cold machine
// reads some 200 MB of binary and fonts.
const chromiumTimeout = 90 * time.Second

// chromiumArgs are the flags of every headless run: no sandbox (tests run
// as root in CI, where Chromium's sandbox refuses to start), no GPU, a
// profile of its own in dir so runs never share state, and a virtual-time
// budget so the page's images have decoded before the screenshot or the
// DOM dump is taken.
func chromiumArgs(dir string, w, h int) []string {
	return []string{
		"--headless=new", "--no-sandbox", "--disable-gpu",
		"--no-first-run", "--no-default-browser-check", "--hide-scrollbars",
		"--user-data-dir=" + filepath.Join(dir, "profile"),
		"--window-size=" + strconv.Itoa(w) + "," + strconv.Itoa(h),
		"--virtual-time-budget=5000",
	}
}

// runChromium runs Debian's chromium (Need: it fails under CI when missing)
// with the common flags and extra, and returns its standard output.
func runChromium(t testing.TB, w, h int, extra ...string) []byte {
	t.Helper()
	bin := Need(t, "chromium")
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), chromiumTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append(chromiumArgs(dir, w, h), extra...)...)
	cmd.Env = append(os.Environ(), "HOME="+dir)
	var stderr limitedBuffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium %v: %v\n%s", extra, err, stderr.b)
	}
	return out
}

// Screenshot renders url (a file:// URL of a local page) in headless
// Chromium in a w×h pixel window and returns the decoded screenshot (w×h,
// as Chromium writes it: 8-bit sRGB PNG). The test fails when Chromium is
// missing under CI, fails to run, or writes no readable PNG.
func Screenshot(t testing.TB, url string, w, h int) image.Image {
	t.Helper()
	out := filepath.Join(t.TempDir(), "screenshot.png")
	runChromium(t, w, h, "--screenshot="+out, url)
	f, err := os.Open(out)
	if err != nil {
		t.Fatalf("chromium wrote no screenshot of %s: %v", url, err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot of %s: %v", url, err)
	}
	return img
}

// DumpDOM loads url in headless Chromium, lets its scripts and images run
// for the virtual-time budget, and returns the serialised DOM (HTML text)
// as it then is. A test that needs to know whether images decoded loads a
// page of its own whose script writes img.naturalWidth into the DOM.
func DumpDOM(t testing.TB, url string) string {
	t.Helper()
	return string(runChromium(t, 800, 600, "--dump-dom", url))
}

// limitedBuffer keeps the first 64 KiB written to it: Chromium's stderr
// is chatty and only its start is worth a test failure's message.
type limitedBuffer struct{ b []byte }

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := 64<<10 - len(l.b); room > 0 {
		if len(p) < room {
			room = len(p)
		}
		l.b = append(l.b, p[:room]...)
	}
	return len(p), nil
}
