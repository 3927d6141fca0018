package pipeline

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLensVignettingImplausible: a lensfun profile whose vignetting k1 is
// −5 (gains ≤ 0 or infinite outside a circle: the picture would be black
// there) is not applied: the image stays as vignetted as with --lens off
// (29 % from its mean), the result and a warning say why.
func TestLensVignettingImplausible(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(lensTestDB, "rawbatch-test.xml"))
	if err != nil {
		t.Fatal(err)
	}
	xml := strings.Replace(string(b), `k1="-0.5" k2="0.15" k3="-0.05"`, `k1="-5" k2="0" k3="0"`, 1)
	if xml == string(b) {
		t.Fatal("test profile's vignetting not found")
	}
	db := t.TempDir()
	if err := os.WriteFile(filepath.Join(db, "bad.xml"), []byte(xml), 0o644); err != nil {
		t.Fatal(err)
	}
	c := lensChartBase
	c.Vignetting, c.Lens, c.FocalLength, c.FNumber = [3]float64{-0.5, 0.15, -0.05}, "Rawbatch Vignette 50mm f/2", 50, 2
	s := lensChartSettings(LensAuto)
	s.LensDB = db
	p, w, h, res := linearPlanes(t, c, s)
	worst := lensFlatness(p, w, h)
	t.Logf("largest departure from the mean %.2f %%; lens %+v; warnings %q", 100*worst, res.Lens, res.Warnings)
	if worst > 0.4 {
		t.Errorf("departure %.2f %%: the implausible gains were applied", 100*worst)
	}
	if res.Lens == nil || res.Lens.Corrections != "" || !strings.HasPrefix(string(res.Lens.Reason), "vignetting not applied: gain") {
		t.Errorf("lens result %+v", res.Lens)
	}
	if w := strings.Join(res.Warnings, "\n"); !strings.Contains(w, "Rawbatch Vignette 50mm f/2): vignetting not applied: gain") {
		t.Errorf("warnings %q", w)
	}
}
