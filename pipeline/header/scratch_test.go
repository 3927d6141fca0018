package header

import (
	"path/filepath"
	"testing"
)

func TestScratchRead(t *testing.T) {
	a, _ := filepath.Glob("../../testdata/raw/*")
	b, _ := filepath.Glob("../../testdata/stubs/*")
	c, _ := filepath.Glob("../../testdata/unsupported/*")
	for _, f := range append(append(a, b...), c...) {
		h, err := Read(f)
		t.Logf("%-40s %-5s %q %q raw %dx%d out %dx%d o%d bps%d spp%d c%d %q lib=%v br=%d\n   exif=%+v\n   err=%v libErr=%v unsup=%q warn=%q crop=%v aa=%v", filepath.Base(f), h.Format, h.Make, h.Model, h.RawWidth, h.RawHeight, h.Width, h.Height, h.Orientation, h.BitsPerSample, h.SamplesPerPixel, h.Compression, h.Variant, h.SizeFromLibRaw, h.BytesRead, h.EXIF, err, h.LibRawErr, h.Unsupported, h.Warnings, h.DefaultCrop, h.ActiveArea)
	}
}
