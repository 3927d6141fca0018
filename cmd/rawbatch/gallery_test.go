package main

import (
	"image"
	_ "image/jpeg"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rawbatch/rawbatch/internal/testtool"
)

// TestGallery: convert --gallery writes OUTDIR/index.html: a thumbnail
// per converted file that loads in headless Chromium (naturalWidth > 0,
// and the red patch of the pictures on the screenshot), name, camera,
// lens, capture time, rating and label, sorted by capture time; the
// failed file with its reason; names escaped (not UTF-8, control
// characters, HTML); a re-run that converts nothing still lists
// everything; and an index.html rawbatch did not write, or a link there,
// is left alone.
func TestGallery(t *testing.T) {
	work := t.TempDir()
	in := filepath.Join(work, "in")
	os.Mkdir(in, 0o755)
	late := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	early := late.Add(-time.Hour)
	os.WriteFile(filepath.Join(in, "z_early.dng"), dngBytes(t, 64, 48, early, galleryTags()...), 0o644)
	os.WriteFile(filepath.Join(in, "a_late.dng"), dngBytes(t, 64, 48, late), 0o644)
	os.WriteFile(filepath.Join(in, "odd<&>\xff.dng"), dngBytes(t, 48, 32, late.Add(time.Hour)), 0o644)
	os.WriteFile(filepath.Join(in, "broken.dng"), []byte("not a raw file at all\n"), 0o644)
	os.WriteFile(filepath.Join(in, "bad\xfe.dng"), []byte("not a raw file either\n"), 0o644)
	os.WriteFile(filepath.Join(in, "esc\x1b[31mred.dng"), dngBytes(t, 48, 32, late.Add(2*time.Hour)), 0o644)

	c := startRB(t, work, nil, "convert", "--min-age", "0s", "--gallery", "in", "-o", "out")
	c.wait(t, 60*time.Second)
	page := filepath.Join(work, "out", "index.html")
	check := func(when string) string {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatalf("%s: %v; output:\n%s", when, err, c.out.String())
		}
		html := string(b)
		for _, want := range []string{
			"z_early.dng", "a_late.dng", `odd&lt;&amp;&gt;\xff.dng`, `esc\x1b[31mred.dng`, // names escaped
			"Test 50mm F1.8", "★★★☆☆", "Green", "2025-06-01 11:00:00", // lens, rating, label, capture time
			"<b>in/broken.dng</b>: not a raw file", `<b>in/bad\xfe.dng</b>: not a raw file`, // the failures and their reasons, the name once
		} {
			if !strings.Contains(html, want) {
				t.Errorf("%s: the page lacks %q:\n%s", when, want, html)
			}
		}
		if n := strings.Count(html, `bad\xfe.dng`); n != 1 {
			t.Errorf("%s: the failed file not UTF-8 is listed %d times, want once", when, n)
		}
		if strings.ContainsRune(html, 0x1b) {
			t.Errorf("%s: the page has a raw escape character", when)
		}
		if strings.Contains(html, "<script") || strings.Contains(html, "http://") || strings.Contains(html, "https://") {
			t.Errorf("%s: the page has a script or a network address", when)
		}
		if i, j := strings.Index(html, "z_early.dng"), strings.Index(html, "a_late.dng"); i < 0 || j < 0 || i > j {
			t.Errorf("%s: not sorted by capture time (z_early first)", when)
		}
		srcs := regexp.MustCompile(`<img src="([^"]+)"`).FindAllStringSubmatch(html, -1)
		if len(srcs) != 4 {
			t.Errorf("%s: %d thumbnails, want 4", when, len(srcs))
		}
		for _, s := range srcs {
			f, err := os.Open(filepath.Join(work, "out", filepath.FromSlash(s[1])))
			if err != nil {
				t.Errorf("%s: thumbnail %s: %v", when, s[1], err)
				continue
			}
			cfg, _, err := image.DecodeConfig(f)
			f.Close()
			if err != nil || cfg.Width == 0 {
				t.Errorf("%s: thumbnail %s does not decode: %v", when, s[1], err)
			}
		}
		return html
	}
	html := check("first run")

	// In Chromium: every thumbnail loads. The page has no script; a copy
	// of it with one that writes each image's naturalWidth is dumped.
	probe := strings.Replace(html, "</body>", `<script>
window.addEventListener('load', () => { for (const img of document.images) img.setAttribute('data-natural-width', img.naturalWidth); });
</script></body>`, 1)
	probePath := filepath.Join(work, "out", "probe.html")
	if err := os.WriteFile(probePath, []byte(probe), 0o644); err != nil {
		t.Fatal(err)
	}
	dom := testtool.DumpDOM(t, "file://"+probePath)
	widths := regexp.MustCompile(`data-natural-width="(\d+)"`).FindAllStringSubmatch(dom, -1)
	if len(widths) != 4 {
		t.Errorf("Chromium saw %d images, want 4:\n%s", len(widths), dom)
	}
	for _, m := range widths {
		if n, _ := strconv.Atoi(m[1]); n == 0 {
			t.Errorf("an image did not load in Chromium (naturalWidth 0)")
		}
	}
	os.Remove(probePath)

	// The screenshot shows the pictures: their red patch (no part of the
	// page's own colours is that red; RAWBATCH_TEST_SHOT=FILE.png keeps
	// the screenshot).
	shot := testtool.Screenshot(t, "file://"+page, 1000, 700)
	if d := os.Getenv("RAWBATCH_TEST_SHOT"); d != "" {
		if f, err := os.Create(d); err == nil {
			png.Encode(f, shot)
			f.Close()
		}
	}
	red := 0
	b := shot.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := shot.At(x, y).RGBA()
			if r>>8 > 200 && g>>8 < 140 && bl>>8 < 140 {
				red++
			}
		}
	}
	t.Logf("%d red pixels of thumbnails on the screenshot", red)
	if red < 1000 {
		t.Errorf("the screenshot shows %d red pixels of the thumbnails, want their red patches", red)
	}

	// A re-run that converts nothing lists everything all the same.
	os.Remove(page)
	c = startRB(t, work, nil, "convert", "--min-age", "0s", "--gallery", "in", "-o", "out")
	c.wait(t, 60*time.Second)
	if !strings.Contains(c.out.String(), "0 converted") {
		t.Errorf("the re-run converted something:\n%s", c.out.String())
	}
	check("re-run")

	// An index.html rawbatch did not write is left alone.
	os.WriteFile(page, []byte("<p>mine</p>"), 0o644)
	c = startRB(t, work, nil, "convert", "--min-age", "0s", "--gallery", "in", "-o", "out")
	c.wait(t, 60*time.Second)
	if b, _ := os.ReadFile(page); string(b) != "<p>mine</p>" {
		t.Errorf("the user's index.html was overwritten")
	}
	if !strings.Contains(c.out.String(), "a page rawbatch did not write") {
		t.Errorf("no warning about the user's index.html:\n%s", c.out.String())
	}

	// A symbolic link there, dangling or not, is the user's too: left as
	// it is, its target not written.
	os.Remove(page)
	target := filepath.Join(work, "elsewhere.html")
	if err := os.Symlink(target, page); err != nil {
		t.Fatal(err)
	}
	c = startRB(t, work, nil, "convert", "--min-age", "0s", "--gallery", "in", "-o", "out")
	c.wait(t, 60*time.Second)
	if fi, err := os.Lstat(page); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the user's link at index.html was replaced (%v)", err)
	}
	if _, err := os.Lstat(target); err == nil {
		t.Errorf("the page was written through the user's dangling link")
	}
	if !strings.Contains(c.out.String(), "a page rawbatch did not write") {
		t.Errorf("no warning about the link at index.html:\n%s", c.out.String())
	}
}
