package encode

import (
	"bytes"
	"image"
	"image/color"
	"testing"
)

// TestReadICC: the profile each encoder embeds reads back byte for byte
// from its file (a profile of two JPEG APP2 chunks); a file without one
// gives nil; a JPEG whose chunk count disagrees is an error.
func TestReadICC(t *testing.T) {
	icc := make([]byte, 70000)
	for i := range icc {
		icc[i] = byte(i*7 + i>>8)
	}
	img := image.NewNRGBA(image.Rect(0, 0, 40, 30))
	for i := range img.Pix {
		img.Pix[i] = byte(i)
	}
	img.Set(0, 0, color.NRGBA{255, 0, 0, 255})
	for _, c := range []struct {
		name string
		enc  func(*bytes.Buffer, []byte) error
	}{
		{"jpeg", func(b *bytes.Buffer, p []byte) error { return JPEG(b, img, 90, p, Metadata{}) }},
		{"png16", func(b *bytes.Buffer, p []byte) error { return PNG16(b, img, p, Metadata{}) }},
		{"png8", func(b *bytes.Buffer, p []byte) error { return PNG8(b, img, p, Metadata{}) }},
		{"tiff16", func(b *bytes.Buffer, p []byte) error { return TIFF16(b, img, p, Metadata{}, true) }},
		{"webp", func(b *bytes.Buffer, p []byte) error { return WebP(b, img, 80, false, p, Metadata{}) }},
	} {
		var with, without bytes.Buffer
		if err := c.enc(&with, icc); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if err := c.enc(&without, nil); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got, err := ReadICC(with.Bytes())
		if err != nil || !bytes.Equal(got, icc) {
			t.Errorf("%s: read back %d bytes (%v), want the %d embedded", c.name, len(got), err, len(icc))
		}
		if got, err := ReadICC(without.Bytes()); got != nil || err != nil {
			t.Errorf("%s without a profile: %d bytes, %v", c.name, len(got), err)
		}
	}
	var b bytes.Buffer
	if err := JPEG(&b, img, 90, icc, Metadata{}); err != nil {
		t.Fatal(err)
	}
	bad := bytes.Replace(b.Bytes(), []byte(iccSig+"\x02\x02"), []byte(iccSig+"\x02\x03"), 1)
	if _, err := ReadICC(bad); err == nil {
		t.Error("a JPEG whose ICC chunks disagree on their count read without an error")
	}
}
