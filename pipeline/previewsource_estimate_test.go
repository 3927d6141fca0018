package pipeline

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/rawbatch/rawbatch/internal/rawerr"
	"github.com/rawbatch/rawbatch/pipeline/synthdng"
)

// TestPreviewSourceEstimate: a 24 MP file whose variants are all made from
// its embedded preview (a 1616×1077 JPEG) is estimated at the preview's
// decode, well under its raw decode: source=preview always, source=auto
// where the header says the preview qualifies (with the raw decode's
// estimate as Memory.Whole, for a fallback found once the file is open),
// and not source=auto for a variant larger than the preview.
func TestPreviewSourceEstimate(t *testing.T) {
	in := realFiles(t, synthdng.RealW, synthdng.RealH, synthdng.RealDNG)[0]
	fi, err := ReadInfo(in)
	if err != nil {
		t.Fatal(err)
	}
	if h := fi.Header; h.PreviewWidth < 1024 || !h.PreviewJPEG {
		t.Fatalf("%s: preview %d×%d (JPEG %v): the test needs a JPEG preview of at least 1024 px", in, h.PreviewWidth, h.PreviewHeight, h.PreviewJPEG)
	}
	est := func(spec string) Memory {
		s := DefaultSettings()
		s.Variants = variants(t, spec)
		return EstimateMemory(fi, s, 1)
	}
	raw := est("t=jpeg,size=512")
	for _, spec := range []string{"t=jpeg,size=512,source=preview", "t=jpeg,size=512,source=auto"} {
		m := est(spec)
		if m.Total > raw.Total/8 || m.Total > 32<<20 {
			t.Errorf("%s: estimate %d bytes, want well under the raw decode's %d (at most an eighth, and 32 MiB)", spec, m.Total, raw.Total)
		}
		for _, st := range m.Steps {
			if st.Step == demosaicStage.Name || st.Step == unpackStage.Name {
				t.Errorf("%s: the estimate counts step %s", spec, st.Step)
			}
		}
	}
	if m := est("t=jpeg,size=512,source=auto"); m.Whole < raw.Whole {
		t.Errorf("source=auto: whole estimate %d, want the raw decode's %d", m.Whole, raw.Whole)
	}
	if m := est("t=jpeg,size=512,source=preview"); m.Whole != m.Total {
		t.Errorf("source=preview: whole estimate %d, want its estimate %d (no fallback)", m.Whole, m.Total)
	}
	if m, r := est("t=jpeg,size=2000,source=auto"), est("t=jpeg,size=2000"); m.Total != r.Total {
		t.Errorf("source=auto larger than the preview: estimate %d, want the raw decode's %d", m.Total, r.Total)
	}
}

// TestEstimateCalibrationPreviewSource: the measured peak memory of a
// conversion made from the embedded preview alone lies within the
// calibration's bounds of its estimate: the 24 MP realistic DNG to a
// 512 px and a 1400 px JPEG (source=preview), and the D30's CRW (a
// 1440×960 JPEG preview) to a 720 px PNG.
func TestEstimateCalibrationPreviewSource(t *testing.T) {
	if testing.Short() {
		t.Skip("measures conversions in child processes")
	}
	real := realFiles(t, synthdng.RealW, synthdng.RealH, synthdng.RealDNG)[0]
	with := func(spec string) Settings {
		s := DefaultSettings()
		s.Variants = variants(t, spec)
		return s
	}
	calibrate(t, os.Stdout, []string{real}, []Settings{with("t=jpeg,size=512,source=preview"), with("t=jpeg,size=1400,source=preview")})
	calibrate(t, os.Stdout, []string{filepath.Join(testdata, "raw", "canond30_CRW.CRW")}, []Settings{with("t=png16,size=720,source=preview")})
}

// TestAutoFallbackNeedsWhole: a conversion admitted at an estimate that
// counted a source=auto variant from the preview its header promised
// (PlannedSources) stops with ErrNeedsWhole when, the file open, the
// variant needs the raw data after all, and converts from the raw data
// when admitted at its whole estimate.
func TestAutoFallbackNeedsWhole(t *testing.T) {
	dir := t.TempDir()
	in := writeSynthetic(t, dir, 400, 300)
	h, err := ReadHeader(in)
	if err != nil {
		t.Fatal(err)
	}
	// The header promises a large preview; the file has none.
	h.SizeFromLibRaw, h.Previews, h.PreviewWidth, h.PreviewHeight, h.PreviewJPEG = true, 1, 4000, 3000, true
	s := DefaultSettings()
	s.Variants = variants(t, "t=jpeg,size=200,source=auto")
	if got := PlannedSources(InfoFromHeader(h), s.Variants, s)[0].Source; got != SourcePreview {
		t.Fatalf("planned source %q, want the preview (the test's premise)", got)
	}
	out := filepath.Join(dir, "t.jpg")
	outs := []OutputSpec{{Variant: s.Variants[0], Path: out}}
	_, err = ConvertOutputs(context.Background(), in, outs, s, ConvertOptions{Header: h, Admitted: 1 << 20, Whole: 4 << 20})
	if !errors.Is(err, rawerr.ErrNeedsWhole) {
		t.Fatalf("admitted at the preview's estimate, falling back to the raw: err %v, want ErrNeedsWhole", err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("stopped conversion left %s (%v)", out, err)
	}
	res, err := ConvertOutputs(context.Background(), in, outs, s, ConvertOptions{Header: h, Admitted: 4 << 20, Whole: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if src := res.Variants[0].Source; src != "raw" {
		t.Errorf("admitted whole: source %q, want raw", src)
	}
}
