package jpegturbo

import (
	"bytes"
	"errors"
	"image"
	"image/color"
	"image/jpeg"
	"testing"
)

// TestDecodeRGB: a JPEG of a left-red, right-blue picture decodes at full,
// half and eighth scale to the expected sizes (rounded up) with the
// colours where they were; broken data fails with ErrDecode.
func TestDecodeRGB(t *testing.T) {
	src := image.NewRGBA(image.Rect(0, 0, 203, 97))
	for y := range 97 {
		for x := range 203 {
			c := color.RGBA{220, 20, 20, 255}
			if x >= 101 {
				c = color.RGBA{20, 20, 220, 255}
			}
			src.SetRGBA(x, y, c)
		}
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, src, &jpeg.Options{Quality: 95}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ denom, w, h int }{{1, 203, 97}, {2, 102, 49}, {8, 26, 13}} {
		pix, w, h, err := DecodeRGB(buf.Bytes(), c.denom)
		if err != nil {
			t.Fatal(err)
		}
		if w != c.w || h != c.h || len(pix) != 3*w*h {
			t.Fatalf("1/%d: %d×%d in %d bytes, want %d×%d", c.denom, w, h, len(pix), c.w, c.h)
		}
		for _, p := range []struct{ x, red int }{{w / 8, 1}, {w - 1 - w/8, 0}} {
			i := 3 * ((h/2)*w + p.x)
			if r, b := pix[i], pix[i+2]; (r > b) != (p.red == 1) || absDiff(r, 220)+absDiff(b, 20) > 30 && absDiff(b, 220)+absDiff(r, 20) > 30 {
				t.Errorf("1/%d pixel (%d,%d): %v", c.denom, p.x, h/2, pix[i:i+3])
			}
		}
	}
	if d := DenomFor(6000, 4000, 512, 341); d != 8 {
		t.Errorf("DenomFor 6000×4000 → 512×341: 1/%d, want 1/8", d)
	}
	if d := DenomFor(1440, 960, 1024, 683); d != 1 {
		t.Errorf("DenomFor 1440×960 → 1024×683: 1/%d, want 1/1", d)
	}
	broken := append([]byte(nil), buf.Bytes()[:buf.Len()/3]...)
	if _, _, _, err := DecodeRGB(broken[:20], 1); !errors.Is(err, ErrDecode) {
		t.Errorf("20 bytes: err %v, want ErrDecode", err)
	}
}

func absDiff(a byte, b int) int {
	if int(a) > b {
		return int(a) - b
	}
	return b - int(a)
}
