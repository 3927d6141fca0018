package batch

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestSettle: recent inputs get the rest of MinAge, once for all, and are
// settled when unchanged after it; a run of old files never waits.
func TestSettle(t *testing.T) {
	var waits []time.Duration
	var during func()
	old := settleSleep
	settleSleep = func(ctx context.Context, d time.Duration) {
		waits = append(waits, d)
		if during != nil {
			during()
		}
	}
	defer func() { settleSleep = old }()

	dir := t.TempDir()
	now := time.Now()
	mk := func(name string, mtime time.Time) string {
		p := filepath.Join(dir, name)
		touch(t, p, []byte("raw data"))
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		return p
	}
	mk("old1.dng", now.Add(-time.Hour))
	mk("old2.dng", now.Add(-10*time.Second))
	r := &Runner{}
	plan := func() *Plan {
		p, err := PlanBatch([]string{dir}, filepath.Join(dir, "out"), ".jpg")
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	r.MinAge = 2 * time.Second
	if got := r.Settle(context.Background(), plan()); got != 0 || len(waits) != 0 {
		t.Fatalf("old files only: waited %v (%v), want no wait", got, waits)
	}

	stable := mk("copied.dng", now.Add(-500*time.Millisecond))
	growing := mk("copying.dng", now.Add(-1500*time.Millisecond))
	during = func() { // the copy of copying.dng goes on
		f, err := os.OpenFile(growing, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte("more"))
		f.Close()
	}
	p := plan()
	r.Settle(context.Background(), p)
	if len(waits) != 1 || waits[0] < time.Second || waits[0] > 2*time.Second {
		t.Fatalf("waits %v, want one of the newest file's remaining ~1.5 s", waits)
	}
	settled := map[string]bool{}
	for _, task := range p.Tasks {
		settled[task.Input] = task.Settled
	}
	if !settled[stable] || settled[growing] {
		t.Errorf("settled %v: want %s only", settled, stable)
	}
	// Preflight converts the settled file and skips the growing one,
	// although both were modified less than MinAge ago.
	r.expand(p)
	for _, task := range p.Tasks {
		fr, _, done := r.preflight(task, false)
		switch task.Input {
		case stable:
			if done {
				t.Errorf("%s settled but skipped: %s", task.Input, fr.Reason)
			}
		case growing:
			if !done || fr.Reason == "" {
				t.Errorf("%s kept changing but was not skipped", task.Input)
			}
		}
	}
}
