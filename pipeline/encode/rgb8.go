package encode

import (
	"image"
	"image/draw"
)

// rgb8Source returns img as an opaque 8-bit *image.RGBA or *image.NRGBA
// (alpha 255 everywhere) for the 8-bit RGB encoders (PNG8, WebP).
// Opaque *image.RGBA and *image.NRGBA are returned as they are;
// *image.NRGBA64 and *image.RGBA64 are rounded to 8 bits with
// round(v·255/65535); other types go through draw.Draw. Translucent pixels
// are composited over black (the premultiplied colour is kept), as JPEG
// does.
func rgb8Source(img image.Image) image.Image {
	var m *image.RGBA
	switch s := img.(type) {
	case *image.RGBA:
		if s.Opaque() {
			return s
		}
		m = image.NewRGBA(s.Rect)
		draw.Draw(m, s.Rect, s, s.Rect.Min, draw.Src)
	case *image.NRGBA:
		if s.Opaque() {
			return s
		}
		m = image.NewRGBA(s.Rect)
		draw.Draw(m, s.Rect, s, s.Rect.Min, draw.Src)
	case *image.NRGBA64:
		m = rgba64ToRGBA(s.Pix, s.Stride, s.Rect, true)
	case *image.RGBA64:
		m = rgba64ToRGBA(s.Pix, s.Stride, s.Rect, false)
	default:
		b := img.Bounds()
		m = image.NewRGBA(b)
		draw.Draw(m, b, img, b.Min, draw.Src)
	}
	if !m.Opaque() {
		for i := 3; i < len(m.Pix); i += 4 {
			m.Pix[i] = 0xFF
		}
	}
	return m
}
