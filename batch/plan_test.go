package batch

import (
	"path/filepath"
	"strings"
	"testing"
)

// outputsOf maps each planned input's path relative to base to its output
// relative to out.
func outputsOf(t *testing.T, p *Plan, base, out string) map[string]string {
	t.Helper()
	got := map[string]string{}
	for _, task := range p.Tasks {
		in, err := filepath.Rel(base, task.Input)
		if err != nil {
			t.Fatal(err)
		}
		got[in] = strings.TrimPrefix(task.Output, out+"/")
	}
	return got
}

// TestPlanBatchCaseCollision: outputs that differ only in case are one file
// on exFAT, SMB and macOS volumes, so they collide, for the main output and
// for a variant's.
func TestPlanBatchCaseCollision(t *testing.T) {
	in := t.TempDir()
	for _, p := range []string{"IMG.dng", "img.DNG", "a/B.nef", "a/b.thumb.nef", "c.dng"} {
		touch(t, filepath.Join(in, p), []byte("x"))
	}
	p, err := PlanBatch([]string{in}, "/out", ".jpg", ".thumb.jpg")
	if err != nil {
		t.Fatal(err)
	}
	folded := map[string]string{}
	for _, task := range p.Tasks {
		for _, sfx := range []string{".jpg", ".thumb.jpg"} {
			k := strings.ToLower(task.Stem + sfx)
			if prev, ok := folded[k]; ok {
				t.Errorf("%s and %s both map to %s (case-folded)", prev, task.Input, k)
			}
			folded[k] = task.Input
		}
	}
	got := outputsOf(t, p, in, "/out")
	want := map[string]string{"IMG.dng": "IMG.dng.jpg", "img.DNG": "img.DNG-2.jpg",
		"a/B.nef": "a/B.nef.jpg", "a/b.thumb.nef": "a/b.thumb.nef.jpg", "c.dng": "c.jpg"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s → %q, want %q", k, got[k], v)
		}
	}
	if len(p.Warnings) != 2 {
		t.Errorf("warnings %q, want one per colliding set", p.Warnings)
	}
}

// TestPlanBatchCollisionOrder: colliding inputs from two roots get the
// same names whichever root is named first.
func TestPlanBatchCollisionOrder(t *testing.T) {
	base := t.TempDir()
	c1, c2 := filepath.Join(base, "c1"), filepath.Join(base, "c2")
	for _, p := range []string{"c1/x.dng", "c2/x.dng", "c2/x.DNG", "c1/y.dng"} {
		touch(t, filepath.Join(base, p), []byte("x"))
	}
	p1, err := PlanBatch([]string{c1, c2}, "/out", ".jpg")
	if err != nil {
		t.Fatal(err)
	}
	p2, err := PlanBatch([]string{c2, c1}, "/out", ".jpg")
	if err != nil {
		t.Fatal(err)
	}
	a, b := outputsOf(t, p1, base, "/out"), outputsOf(t, p2, base, "/out")
	if len(a) != 4 {
		t.Fatalf("planned %v", a)
	}
	for k, v := range a {
		if b[k] != v {
			t.Errorf("%s → %s with c1 first, %s with c2 first", k, v, b[k])
		}
	}
	if a["c2/x.DNG"] != "x.DNG.jpg" || a["c1/x.dng"] != "x.dng-2.jpg" || a["c2/x.dng"] != "x.dng-3.jpg" {
		t.Errorf("names %v: want c2/x.DNG → x.DNG.jpg, c1/x.dng → x.dng-2.jpg, c2/x.dng → x.dng-3.jpg", a)
	}
	if strings.Join(p1.Warnings, "\n") != strings.Join(p2.Warnings, "\n") {
		t.Errorf("warnings depend on the argument order:\n%q\n%q", p1.Warnings, p2.Warnings)
	}
}
