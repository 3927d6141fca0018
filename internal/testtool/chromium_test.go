package testtool

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestScreenshot renders a page of two coloured halves and finds each
// colour where the page put it: the screenshot is of the page, at the
// asked size.
func TestScreenshot(t *testing.T) {
	page := filepath.Join(t.TempDir(), "page.html")
	html := `<!doctype html><body style="margin:0">` +
		`<div style="width:100vw;height:50vh;background:#ff0000"></div>` +
		`<div style="width:100vw;height:50vh;background:#0000ff"></div>`
	if err := os.WriteFile(page, []byte(html), 0o644); err != nil {
		t.Fatal(err)
	}
	img := Screenshot(t, "file://"+page, 320, 200)
	if b := img.Bounds(); b.Dx() != 320 || b.Dy() != 200 {
		t.Fatalf("screenshot %v, want 320×200", b)
	}
	for _, c := range []struct {
		y       int
		r, g, b uint32
	}{{40, 0xffff, 0, 0}, {160, 0, 0, 0xffff}} {
		r, g, b, _ := img.At(160, c.y).RGBA()
		if absDiff(r, c.r) > 0x1000 || absDiff(g, c.g) > 0x1000 || absDiff(b, c.b) > 0x1000 {
			t.Errorf("pixel (160,%d) = %04x %04x %04x, want %04x %04x %04x", c.y, r, g, b, c.r, c.g, c.b)
		}
	}
}

// TestDumpDOM: the DOM is taken after the page's script ran.
func TestDumpDOM(t *testing.T) {
	page := filepath.Join(t.TempDir(), "page.html")
	html := `<!doctype html><body><p id="p">before</p>` +
		`<script>document.getElementById("p").textContent = "after-" + (6*7);</script>`
	if err := os.WriteFile(page, []byte(html), 0o644); err != nil {
		t.Fatal(err)
	}
	if dom := DumpDOM(t, "file://"+page); !strings.Contains(dom, "after-42") {
		t.Errorf("DOM does not show the script's change:\n%s", dom)
	}
}

func absDiff(a, b uint32) uint32 {
	if a > b {
		return a - b
	}
	return b - a
}
