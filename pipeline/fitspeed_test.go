package pipeline

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/rawbatch/rawbatch/pipeline/look"
)

// previewSamples are the sample files with a usable embedded preview.
func previewSamples() []string {
	return []string{filepath.Join(testdata, "raw", "canon_eos_6d.dng"), filepath.Join(testdata, "raw", "canond30_CRW.CRW")}
}

// runUntil runs the file's planned steps for s up to, not including, the
// step named stop, and returns the job (its LibRaw handle on the caller's
// locked OS thread: the caller locks it and calls j.cleanup).
func runUntil(t *testing.T, in string, s Settings, stop string) *job {
	t.Helper()
	hdr, err := ReadHeader(in)
	if err != nil {
		t.Fatal(err)
	}
	j := &job{in: in, settings: s, hdr: hdr}
	for _, st := range PlanStages(InfoFromHeader(hdr), s).Steps {
		if st.Name == stop {
			return j
		}
		if err := st.stage.run(context.Background(), j); err != nil {
			j.cleanup()
			t.Fatalf("%s: %s: %v", in, st.Name, err)
		}
	}
	j.cleanup()
	t.Fatalf("%s: no step %s planned", in, stop)
	return nil
}

// TestAnchorFitsMatchReference: on the two sample files with a preview,
// the default look's exposure search (look.AnchorExposureDeltaE, on the
// prepared render with early stops) finds the same exposure as the direct
// render of every cell at every exposure (AnchorExposureDeltaEReference),
// on the whole grid and on the camera look's fit half.
func TestAnchorFitsMatchReference(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for _, in := range previewSamples() {
		j := runUntil(t, in, DefaultSettings(), "exposure-anchor")
		cells, err := j.anchorCells(j.preview)
		j.cleanup()
		if err != nil {
			t.Fatal(err)
		}
		for _, mask := range [][]bool{nil, look.CVMask(cells.Scene.W, cells.Scene.H)} {
			got, err := look.AnchorExposureDeltaE(cells, j.toneCurve(), j.preview.Space, mask)
			if err != nil {
				t.Fatal(err)
			}
			want, err := look.AnchorExposureDeltaEReference(cells, j.toneCurve(), j.preview.Space, mask)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s (mask %v): %s, mean ΔE2000 %.9f; reference %s, %.9f", filepath.Base(in), mask != nil, got, got.Score, want, want.Score)
			if math.Abs(got.Raw-want.Raw) > 1e-9 || math.Abs(got.Score-want.Score) > 1e-9 || got.Cells != want.Cells || got.Consistent != want.Consistent {
				t.Errorf("%s (mask %v): %s, reference %s", filepath.Base(in), mask != nil, got, want)
			}
		}
	}
}

// TestWBFitMatchesReference: the white balance fitted to the preview of
// the D30 CRW (no usable as-shot multipliers) by look.FitWB (columns
// premultiplied, early stops, candidates on two threads) equals the
// direct search's (FitWBReference): gains and residual within 1e-9.
func TestWBFitMatchesReference(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	in := filepath.Join(testdata, "raw", "canond30_CRW.CRW")
	j := runUntil(t, in, DefaultSettings(), "white-balance")
	wb, note := j.previewWBInputs()
	j.cleanup()
	if note != "" {
		t.Fatal(note)
	}
	wb.cells.Threads = 2
	got, err := look.FitWB(wb.cam, wb.toSpace, wb.cells, look.DefaultCurve, nil)
	if err != nil {
		t.Fatal(err)
	}
	want, err := look.FitWBReference(wb.cam, wb.toSpace, wb.cells, look.DefaultCurve, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("FitWB %+v, reference %+v", got, want)
	for k := range 3 {
		if math.Abs(got.Gains[k]-want.Gains[k]) > 1e-9 {
			t.Errorf("gains %v, reference %v", got.Gains, want.Gains)
		}
	}
	if math.Abs(got.Residual-want.Residual) > 1e-9 || got.Cells != want.Cells {
		t.Errorf("residual %.12f over %d cells, reference %.12f over %d", got.Residual, got.Cells, want.Residual, want.Cells)
	}
}

// BenchmarkPreviewFits times the preview fits of the two sample files with
// a preview on their real grids, each alone: the white balance fitted to
// the D30's preview (wb) and the default look's exposure search (anchor),
// on one and two threads.
func BenchmarkPreviewFits(b *testing.B) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	t := &testing.T{}
	crw := filepath.Join(testdata, "raw", "canond30_CRW.CRW")
	j := runUntil(t, crw, DefaultSettings(), "white-balance")
	wb, note := j.previewWBInputs()
	j.cleanup()
	if note != "" {
		b.Fatal(note)
	}
	for _, threads := range []int{1, 2} {
		b.Run(fmt.Sprintf("canond30_CRW.CRW/wb-%dthread", threads), func(b *testing.B) {
			c := wb.cells
			c.Threads = threads
			for b.Loop() {
				if _, err := look.FitWB(wb.cam, wb.toSpace, c, look.DefaultCurve, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	for _, in := range previewSamples() {
		j := runUntil(t, in, DefaultSettings(), "exposure-anchor")
		cells, err := j.anchorCells(j.preview)
		j.cleanup()
		if err != nil {
			b.Fatal(err)
		}
		name := filepath.Base(in)
		b.Run(name+"/anchor", func(b *testing.B) {
			for b.Loop() {
				if _, err := look.AnchorExposureDeltaE(cells, j.toneCurve(), j.preview.Space, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/anchor-1thread", func(b *testing.B) {
			c := cells
			c.Threads = 1
			for b.Loop() {
				if _, err := look.AnchorExposureDeltaE(c, j.toneCurve(), j.preview.Space, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
