package batch

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/rawbatch/rawbatch/budget"
	"github.com/rawbatch/rawbatch/internal/rawerr"
	"github.com/rawbatch/rawbatch/pipeline"
)

// cacheRecorder records whether each job was given the stage cache and the
// estimate it was sent with.
type cacheRecorder struct {
	t    *testing.T
	mu   sync.Mutex
	jobs map[string]Job
}

func (c *cacheRecorder) Overhead() int64 { return 0 }

func (c *cacheRecorder) Execute(_ context.Context, j Job) Outcome {
	c.mu.Lock()
	c.jobs[filepath.Base(string(j.Input))] = j
	c.mu.Unlock()
	return writeOutputs(c.t, j)
}

// TestStreamedReadsCache: every file is given the stage cache, a file
// admitted at the estimate of a streamed conversion (Memory.Whole above
// Total) too: a hit that streams from the entry's rows fits what it was
// admitted with, one that would make the whole image stops with
// rawerr.ErrNeedsWhole and is admitted again (TestNeedsWholeReadmits).
// With a kept cache every file is admitted, sent and reported at its
// whole-image estimate; without, a streamed file keeps its streamed one.
func TestStreamedReadsCache(t *testing.T) {
	for _, keep := range []bool{false, true} {
		in, out := t.TempDir(), t.TempDir()
		for _, n := range []string{"streamed.dng", "whole.dng"} {
			touch(t, filepath.Join(in, n), []byte("not really a raw"))
		}
		p, err := PlanBatch([]string{in}, out, ".jpg")
		if err != nil {
			t.Fatal(err)
		}
		for i := range p.Tasks {
			e := pipeline.Memory{Total: 300, Whole: 300}
			if filepath.Base(p.Tasks[i].Input) == "streamed.dng" {
				e = pipeline.Memory{Total: 100, Whole: 300}
			}
			p.Tasks[i].Estimate = e
		}
		if keep {
			p.WholeEstimates()
		}
		ex := &cacheRecorder{t: t, jobs: map[string]Job{}}
		s := pipeline.DefaultSettings()
		r := &Runner{Settings: s, Jobs: 1, Cores: 1, Executor: ex, OutDir: out, SettingsHash: SettingsHash(s),
			CacheDir: t.TempDir(), KeepCache: keep}
		res := r.Run(context.Background(), p)
		for _, fr := range res {
			if fr.Status != StatusConverted {
				t.Fatalf("%s: %s %v", fr.Input, fr.Status, fr.Err)
			}
			name := filepath.Base(fr.Input)
			j := ex.jobs[name]
			if j.Cache == nil {
				t.Errorf("keep %v: %s not given the cache", keep, name)
			}
			wantEst := int64(100)
			if keep || name == "whole.dng" {
				wantEst = 300
			}
			if j.Estimate != wantEst || fr.Estimate.Total != wantEst {
				t.Errorf("keep %v: %s sent with estimate %d, reported %d; want %d", keep, name, j.Estimate, fr.Estimate.Total, wantEst)
			}
		}
	}
}

// wholeOnRetry fails a job sent below its whole-image estimate with
// rawerr.ErrNeedsWhole, as a worker does whose file cannot stream, and
// converts the others; it records the estimates it was sent.
type wholeOnRetry struct {
	t    *testing.T
	mu   sync.Mutex
	sent []int64
}

func (w *wholeOnRetry) Overhead() int64 { return 0 }

func (w *wholeOnRetry) Execute(_ context.Context, j Job) Outcome {
	w.mu.Lock()
	w.sent = append(w.sent, j.Estimate)
	w.mu.Unlock()
	if j.Whole > j.Estimate {
		return Outcome{Err: fmt.Errorf("%s: %w", j.Input, rawerr.ErrNeedsWhole)}
	}
	return writeOutputs(w.t, j)
}

// TestNeedsWholeReadmits: a file admitted at its streamed estimate whose
// conversion stops with rawerr.ErrNeedsWhole is admitted again at its
// whole-image estimate and converted, reported at that estimate; one
// whose whole-image estimate is over the budget fails over budget.
func TestNeedsWholeReadmits(t *testing.T) {
	for _, c := range []struct {
		budget int64
		want   Status
	}{{1000, StatusConverted}, {200, StatusFailed}} {
		in, out := t.TempDir(), t.TempDir()
		touch(t, filepath.Join(in, "a.dng"), []byte("not really a raw"))
		p, err := PlanBatch([]string{in}, out, ".jpg")
		if err != nil {
			t.Fatal(err)
		}
		p.Tasks[0].Estimate = pipeline.Memory{Total: 100, Whole: 300}
		ex := &wholeOnRetry{t: t}
		s := pipeline.DefaultSettings()
		r := &Runner{Settings: s, Jobs: 2, Cores: 2, Budget: c.budget, Executor: ex, OutDir: out, SettingsHash: SettingsHash(s)}
		res := r.Run(context.Background(), p)
		fr := res[0]
		if fr.Status != c.want {
			t.Fatalf("budget %d: %s %v, want %s", c.budget, fr.Status, fr.Err, c.want)
		}
		switch c.want {
		case StatusConverted:
			if len(ex.sent) != 2 || ex.sent[0] != 100 || ex.sent[1] != 300 || fr.Estimate.Total != 300 {
				t.Errorf("sent estimates %v, reported %d; want [100 300], 300", ex.sent, fr.Estimate.Total)
			}
		default:
			if !errors.Is(fr.Err, budget.ErrOverBudget) || len(ex.sent) != 1 {
				t.Errorf("over budget: err %v after %d conversions; want ErrOverBudget after 1", fr.Err, len(ex.sent))
			}
		}
		if b, _ := r.Scheduler.Stats(); b > c.budget {
			t.Errorf("budget %d: %d admitted at once", c.budget, b)
		}
	}
}
