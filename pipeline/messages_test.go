package pipeline

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestSettingErrorsOneStyle: every refused setting name lists what is
// accepted in one style, "(want a, b or c)", never "a|b|c".
func TestSettingErrorsOneStyle(t *testing.T) {
	for name, parse := range map[string]func() error{
		"white level": func() error { _, err := ParseWhiteLevel("x"); return err },
		"highlights":  func() error { _, err := ParseHighlights("x"); return err },
		"demosaic":    func() error { _, err := ParseDemosaic("x"); return err },
		"anchor":      func() error { _, err := ParseExposureAnchor("x"); return err },
		"look":        func() error { _, err := ParseLook("x"); return err },
		"tone":        func() error { _, err := ParseToneCurve("x"); return err },
	} {
		err := parse()
		if err == nil {
			t.Errorf("%s: x accepted", name)
			continue
		}
		if msg := err.Error(); strings.Contains(msg, "|") || !strings.Contains(msg, "(want ") || !strings.Contains(msg, " or ") {
			t.Errorf("%s: %q, want \"(want a, b or c)\"", name, msg)
		}
	}
	if got := wantList(HighlightNames); got != "clip or reconstruct" {
		t.Errorf("wantList(%q) = %q", HighlightNames, got)
	}
	if got := wantList(DemosaicNames); got != "linear, vng, ppg, ahd, dcb, dht, aahd or rcd" {
		t.Errorf("wantList(%q) = %q", DemosaicNames, got)
	}
}

// TestLookMessages: the look's per-file messages, on the
// real files: a white-balance warning has one parenthesis (the D30's
// preview fit); the Kodak C330, which LibRaw has no colour matrix for,
// says its daylight white is camera RGB taken as sRGB and that there is no
// mosaic data to estimate from; --look camera --tone none on the 6D says
// why the default look was used; --look neutral says why the preview
// anchor was not applied.
func TestLookMessages(t *testing.T) {
	dir := t.TempDir()
	conv := func(file string, set func(*Settings)) Result {
		t.Helper()
		s := DefaultSettings()
		s.HalfSize = true
		set(&s)
		outs := []OutputSpec{{Variant: Variant{Name: "main", Format: "png8", Space: "srgb"}, Path: filepath.Join(dir, "out.png")}}
		res, err := ConvertVariants(context.Background(), filepath.Join(testdata, "raw", file), outs, s, nil)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		return res
	}
	wbWarning := func(res Result) string {
		for _, w := range res.Warnings {
			if strings.HasPrefix(w, "white balance ") {
				return w
			}
		}
		return ""
	}
	d30 := wbWarning(conv("canond30_CRW.CRW", func(*Settings) {}))
	if strings.Count(d30, "(") != 1 || !strings.HasSuffix(d30, ")") || !strings.Contains(d30, "; residual ") {
		t.Errorf("D30: %q, want one parenthesis with the residual and the multipliers", d30)
	}
	kodak := wbWarning(conv("RAW_KODAK_C330_FORMAT_NONE_YRGB.raw", func(*Settings) {}))
	if strings.Contains(kodak, "from the colour matrix") || !strings.Contains(kodak, "taken as sRGB") || !strings.Contains(kodak, "no mosaic data") {
		t.Errorf("Kodak C330: %q, want the daylight of camera RGB taken as sRGB, no mosaic data to estimate from", kodak)
	}
	res := conv("canon_eos_6d.dng", func(s *Settings) { s.Look, s.Tone = LookCamera, ToneNone })
	found := false
	for _, w := range res.Warnings {
		if strings.HasPrefix(w, "--look camera: used the default look: ") {
			found = true
			if !strings.Contains(w, "--tone none") {
				t.Errorf("--look camera --tone none: %q gives no reason", w)
			}
		}
	}
	if !found || !strings.HasSuffix(res.Exposure.Source, "no preview anchor: --tone none") {
		t.Errorf("--look camera --tone none: warnings %q, exposure %q", res.Warnings, res.Exposure.Source)
	}
	res = conv("canon_eos_6d.dng", func(s *Settings) { s.Look, s.ExposureAnchor = LookNeutral, AnchorPreview })
	if !strings.HasSuffix(res.Exposure.Source, "no preview anchor: --look neutral") {
		t.Errorf("--look neutral --exposure-anchor preview: exposure source %q does not say why there is no anchor", res.Exposure.Source)
	}
}
