package pipeline

import (
	"strings"
	"testing"
)

// TestCheckOutputLimits: a panorama's full-size WebP variant fails before
// decoding with a hint; a resized one, or half size that fits, does not.
func TestCheckOutputLimits(t *testing.T) {
	fi := FileInfo{Width: 17000, Height: 1000}
	s := DefaultSettings()
	s.Variants = []Variant{{Name: "main", Format: "jpeg"}, {Name: "w", Format: "webp"}}
	err := CheckOutputLimits("pano.dng", fi, s)
	if err == nil || !strings.Contains(err.Error(), "variant w would be 17000×1000, larger than WebP's limit of 16383 pixels a side; give it size=16383 or less") {
		t.Errorf("full-size WebP of 17000 px: %v", err)
	}
	s.Variants[1].Size = 2000
	if err := CheckOutputLimits("pano.dng", fi, s); err != nil {
		t.Errorf("2000 px WebP: %v", err)
	}
	s.Variants[1].Size = 0
	s.HalfSize = true
	if err := CheckOutputLimits("pano.dng", fi, s); err != nil {
		t.Errorf("half-size WebP (8500 px): %v", err)
	}
}
