package pipeline

import (
	"math"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/rawbatch/rawbatch/pipeline/colour"
	"github.com/rawbatch/rawbatch/pipeline/look"
)

// cvResidualRE reads the camera look's cross-validated residual from
// Result.Exposure.Source (fitCameraLook's note).
var cvResidualRE = regexp.MustCompile(`cross-validated mean ΔE2000 ([0-9.]+)`)

// TestCameraLookResidualPredictsRender: the camera look's cross-validated
// residual predicts what the conversion writes: on both sample files it
// is within 0.15 of the full render's look score (scoreAgainstPreview,
// the look's measure). For that the fit is scored like the render: on the
// score's grid of the preview (not the pipeline's reduced preview, whose
// height differs: 171 rows against 170), raw-clipped and dark cells
// included; scored on that other grid without them, it lands 0.56 below
// on the D30.
func TestCameraLookResidualPredictsRender(t *testing.T) {
	for _, f := range []string{"canon_eos_6d.dng", "canond30_CRW.CRW"} {
		in := filepath.Join(testdata, "raw", f)
		s := DefaultSettings()
		s.Format = PNG16
		s.Look = LookCamera
		s.Lens = LensOff // the look is measured so (BenchmarkLookTable)
		out, res := convert(t, in, t.TempDir(), s)
		m := cvResidualRE.FindStringSubmatch(res.Exposure.Source)
		if m == nil {
			t.Fatalf("%s: no camera look residual in %q (warnings %q)", f, res.Exposure.Source, res.Warnings)
		}
		cv, _ := strconv.ParseFloat(m[1], 64)
		full := scoreAgainstPreview(t, in, out)
		t.Logf("%s: cross-validated %.2f, full render %.2f", f, cv, full)
		if math.Abs(cv-full) > 0.15 {
			t.Errorf("%s: cross-validated residual %.2f, full render %.2f: the fit does not score what the conversion writes", f, cv, full)
		}
	}
}

// TestLookCameraToWorkingMatrix: the camera-matrix stage's matrix with
// --look camera is the fit's render (look.CameraLook.Render): gains on
// camera RGB, the camera matrix, then the look's colour matrix (fitted in
// the preview's space, applied in the working space).
func TestLookCameraToWorkingMatrix(t *testing.T) {
	j := &job{}
	j.info.RGBCam = [3][4]float64{{1.7, -0.55, -0.15, 0}, {-0.2, 1.5, -0.3, 0}, {0.02, -0.45, 1.43, 0}}
	l := look.CameraLook{Gains: [3]float64{1.2, 1, 0.9}, Matrix: colour.Mat3{{1.1, -0.06, -0.04}, {-0.05, 1.08, -0.03}, {0.01, -0.11, 1.1}}, Space: colour.SRGB}
	j.cameraLook = &l
	toSRGB := j.cameraToSpace(colour.SRGB)
	m := j.lookCameraToWorking()
	cam := [3]float64{0.2, 0.3, 0.15}
	var w [3]float64
	for i := range 3 {
		w[i] = m[i][0]*cam[0] + m[i][1]*cam[1] + m[i][2]*cam[2]
	}
	got := colour.ConvertMatrix(WorkingSpace, colour.SRGB).Apply(w)
	want := l.Matrix.Mul(toSRGB).Apply([3]float64{cam[0] * 1.2, cam[1], cam[2] * 0.9})
	for i := range 3 {
		if math.Abs(got[i]-want[i]) > 1e-9 {
			t.Fatalf("stage matrix gives %v, the fit's render %v", got, want)
		}
	}
}
