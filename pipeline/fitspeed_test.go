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

// TestCameraFitMatchesReference: on the two sample files with a preview,
// --look camera's fit (look.FitCamera on its prepared objectives, early
// stops, two threads) finds the look the direct implementation finds
// (FitOptions.Reference): gains, EV, saturation, the curve and matrix
// weights within 1e-9, the colour matrix and the curve (at 2^-10 … 1 by
// 1/4 EV) within 1e-9, the residuals within 1e-6 mean ΔE2000.
func TestCameraFitMatchesReference(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	s := DefaultSettings()
	s.Look = LookCamera
	for _, in := range previewSamples() {
		j := runUntil(t, in, s, "exposure-anchor")
		fit, err := j.cameraFitInputs()
		j.cleanup()
		if err != nil {
			t.Fatal(err)
		}
		fit.cells.Threads = 2
		got, err := look.FitCamera(fit.camera, fit.toSpace, j.preview.Space, fit.cells, fit.opts)
		if err != nil {
			t.Fatal(err)
		}
		ref := fit.opts
		ref.Reference = true
		want, err := look.FitCamera(fit.camera, fit.toSpace, j.preview.Space, fit.cells, ref)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(in)
		t.Logf("%s: gains %v EV %.4f sat %.2f curve %.1f matrix %.1f residual %.6f fit %.6f; reference gains %v EV %.4f sat %.2f curve %.1f matrix %.1f residual %.6f fit %.6f",
			name, got.Gains, got.EV, got.Saturation, got.CurveWeight, got.MatrixWeight, got.Residual, got.FitResidual,
			want.Gains, want.EV, want.Saturation, want.CurveWeight, want.MatrixWeight, want.Residual, want.FitResidual)
		params := func(l look.CameraLook) []float64 {
			p := []float64{l.Gains[0], l.Gains[1], l.Gains[2], l.EV, l.Saturation, l.CurveWeight, l.MatrixWeight}
			for r := range 3 {
				p = append(p, l.Matrix[r][:]...)
			}
			for e := -10.0; e <= 0; e += 0.25 {
				p = append(p, l.Curve.Apply(math.Exp2(e)))
			}
			return p
		}
		g, w := params(got), params(want)
		for i := range g {
			if math.Abs(g[i]-w[i]) > 1e-9 {
				t.Errorf("%s: parameter %d %.12f, reference %.12f", name, i, g[i], w[i])
			}
		}
		if math.Abs(got.Residual-want.Residual) > 1e-6 || math.Abs(got.FitResidual-want.FitResidual) > 1e-6 || got.Cells != want.Cells {
			t.Errorf("%s: residual %.9f (fit %.9f) on %d cells, reference %.9f (fit %.9f) on %d", name, got.Residual, got.FitResidual, got.Cells, want.Residual, want.FitResidual, want.Cells)
		}
	}
}

// BenchmarkPreviewFits times the preview fits of the two sample files with
// a preview on their real grids, each alone: the white balance fitted to
// the D30's preview (wb), the default look's exposure search (anchor) and
// --look camera's fit (camera), on one and two threads, and their direct
// references (the straightforward implementations), on one.
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
	cpuBench(b, "canond30_CRW.CRW/wb-reference", func() error {
		_, err := look.FitWBReference(wb.cam, wb.toSpace, wb.cells, look.DefaultCurve, nil)
		return err
	})
	for _, threads := range []int{1, 2} {
		c := wb.cells
		c.Threads = threads
		cpuBench(b, fmt.Sprintf("canond30_CRW.CRW/wb-%dthread", threads), func() error {
			_, err := look.FitWB(wb.cam, wb.toSpace, c, look.DefaultCurve, nil)
			return err
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
		s := DefaultSettings()
		s.Look = LookCamera
		cj := runUntil(t, in, s, "exposure-anchor")
		fit, err := cj.cameraFitInputs()
		cj.cleanup()
		if err != nil {
			b.Fatal(err)
		}
		cpuBench(b, name+"/anchor-reference", func() error {
			_, err := look.AnchorExposureDeltaEReference(cells, j.toneCurve(), j.preview.Space, nil)
			return err
		})
		ref := fit.opts
		ref.Reference = true
		cpuBench(b, name+"/camera-reference", func() error {
			_, err := look.FitCamera(fit.camera, fit.toSpace, cj.preview.Space, fit.cells, ref)
			return err
		})
		for _, threads := range []int{1, 2} {
			c := cells
			c.Threads = threads
			cpuBench(b, fmt.Sprintf("%s/anchor-%dthread", name, threads), func() error {
				_, err := look.AnchorExposureDeltaE(c, j.toneCurve(), j.preview.Space, nil)
				return err
			})
			fc := fit.cells
			fc.Threads = threads
			cpuBench(b, fmt.Sprintf("%s/camera-%dthread", name, threads), func() error {
				_, err := look.FitCamera(fit.camera, fit.toSpace, cj.preview.Space, fc, fit.opts)
				return err
			})
		}
	}
}

// cpuBench runs f as sub-benchmark name and reports its CPU time
// (user + system of the process) per call, cpu-ms/op.
func cpuBench(b *testing.B, name string, f func() error) {
	b.Run(name, func(b *testing.B) {
		c0 := cpuTime()
		for b.Loop() {
			if err := f(); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64((cpuTime()-c0).Microseconds())/1000/float64(b.N), "cpu-ms/op")
	})
}
