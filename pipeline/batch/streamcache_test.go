package batch

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

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

// TestStreamedReadsNoCache: a file admitted at the estimate of a streamed
// conversion (Memory.Whole above Total) is not given the stage cache
// unless the cache is kept, since an entry a kept run left would be read
// whole, beyond what was admitted; with a kept cache every file is
// admitted, sent and reported at its whole-image estimate. Files whose
// estimate is already whole (several variants, small files) keep the
// cache.
func TestStreamedReadsNoCache(t *testing.T) {
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
			wantCache := keep || name == "whole.dng"
			if (j.Cache != nil) != wantCache {
				t.Errorf("keep %v: %s given the cache: %v, want %v", keep, name, j.Cache != nil, wantCache)
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
