package batch

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rawbatch/rawbatch/budget"
	"github.com/rawbatch/rawbatch/pipeline"
)

// workerLike converts every job (writing its outputs) and counts a worker
// process's own memory per conversion, as Subprocess does.
type workerLike struct{ t *testing.T }

func (workerLike) Overhead() int64 { return WorkerRSS }

func (w workerLike) Execute(_ context.Context, j Job) Outcome { return writeOutputs(w.t, j) }

// onePlan plans the one input of folder in into out as JPEG, with the
// header fi and the estimate est in place of what the file would give.
func onePlan(t *testing.T, in, out string, fi pipeline.FileInfo, est pipeline.Memory) *Plan {
	t.Helper()
	p, err := PlanBatch([]string{in}, out, ".jpg")
	if err != nil {
		t.Fatal(err)
	}
	p.Tasks[0].Info, p.Tasks[0].Estimate = fi, est
	return p
}

// TestDryRunAdmitsAsRun: for a file whose need is just within the budget
// and one just beyond it, with and without a kept stage cache, the dry
// run's verdict (planned, or failed over budget) is the run's: converted,
// or failed with budget.ErrOverBudget. The budget is placed one byte
// either side of the need the dry run reports; a kept cache's entry
// (tmpfs is memory) must be in both or in neither.
func TestDryRunAdmitsAsRun(t *testing.T) {
	s := pipeline.DefaultSettings()
	fi := pipeline.FileInfo{Width: 600, Height: 400}
	if pipeline.CacheEntryBytes(fi, s) == 0 {
		t.Fatal("the file has no cache entry: the kept-cache case would test nothing")
	}
	for _, keep := range []bool{false, true} {
		for _, side := range []int64{-1, 0, +1} { // budget = need + side
			t.Run(fmt.Sprintf("keep=%v/budget=need%+d", keep, side), func(t *testing.T) {
				in, out := t.TempDir(), t.TempDir()
				touch(t, filepath.Join(in, "a.dng"), []byte("not really a raw"))
				newPlan := func() *Plan {
					p := onePlan(t, in, out, fi, pipeline.Memory{Total: 40 << 20, Whole: 90 << 20, Streamed: true})
					if keep {
						p.WholeEstimates() // as planBatch does
					}
					return p
				}
				runner := func(memBudget int64) *Runner {
					return &Runner{Settings: s, Jobs: 1, Cores: 1, Budget: memBudget, Executor: workerLike{t}, OutDir: out,
						SettingsHash: SettingsHash(s), CacheDir: t.TempDir(), KeepCache: keep}
				}
				// The need the dry run reports, at an ample budget.
				probe, _ := runner(1 << 40).DryPlan(newPlan())
				need := probe[0].NeedBytes
				if need <= 0 {
					t.Fatalf("dry run reports no need: %+v", probe[0])
				}
				memBudget := need + side
				dry, _ := runner(memBudget).DryPlan(newPlan())
				res := runner(memBudget).Run(context.Background(), newPlan())
				dryFits := dry[0].Status == StatusPlanned
				runFits := res[0].Status == StatusConverted
				if dryFits != runFits {
					t.Fatalf("budget %d (dry run's need %d): dry run %s (%s), run %s (%v)", memBudget, need, dry[0].Status, dry[0].Reason, res[0].Status, res[0].Err)
				}
				if wantFits := side >= 0; dryFits != wantFits {
					t.Errorf("budget need%+d: fits %v, want %v", side, dryFits, wantFits)
				}
				if !runFits && (!errors.Is(res[0].Err, budget.ErrOverBudget) || dry[0].Kind != "over-budget") {
					t.Errorf("refused: run's error %v, dry run's kind %q; want over budget both", res[0].Err, dry[0].Kind)
				}
				if res[0].NeedBytes != need {
					t.Errorf("run held (or was refused) %d bytes, the dry run says %d", res[0].NeedBytes, need)
				}
			})
		}
	}
}

// TestOverBudgetHalfSizeHint: the over-budget error suggests --half-size,
// with its estimate, only for a file not already estimated at half size
// whose half-size estimate fits in the budget; a file already at half
// size is told so; in the run and in the dry run alike.
func TestOverBudgetHalfSizeHint(t *testing.T) {
	s := pipeline.DefaultSettings()
	fi := pipeline.FileInfo{Width: 600, Height: 400, CFA: true}
	hs := s
	hs.HalfSize = true
	half := pipeline.EstimateMemory(fi, hs, 1).Total + WorkerRSS // as Need counts it
	for _, c := range []struct {
		name     string
		halfSize bool
		budget   int64
		want     string
		not      string
	}{
		{"half fits", false, 2 * half, "or use --half-size (an estimated " + budget.FormatSize(half) + ")", "already"},
		{"half does not fit", false, half - 1, "(raise --mem-budget)", "--half-size"},
		{"already half", true, 2 * half, "(raise --mem-budget; it is already decoded at half size)", "use --half-size"},
	} {
		t.Run(c.name, func(t *testing.T) {
			in, out := t.TempDir(), t.TempDir()
			touch(t, filepath.Join(in, "a.dng"), []byte("not really a raw"))
			newPlan := func() *Plan {
				return onePlan(t, in, out, fi, pipeline.Memory{Total: 4 * half, Whole: 4 * half, HalfSize: c.halfSize})
			}
			r := &Runner{Settings: s, Jobs: 1, Cores: 1, Budget: c.budget, Executor: workerLike{t}, OutDir: out,
				SettingsHash: SettingsHash(s)}
			res := r.Run(context.Background(), newPlan())
			dry, _ := r.DryPlan(newPlan())
			if !errors.Is(res[0].Err, budget.ErrOverBudget) {
				t.Fatalf("run: %v, want over budget", res[0].Err)
			}
			for what, msg := range map[string]string{"run": res[0].Err.Error(), "dry run": dry[0].Reason} {
				if !strings.Contains(msg, c.want) || strings.Contains(msg, c.not) {
					t.Errorf("%s: %q; want it to say %q and not %q", what, msg, c.want, c.not)
				}
			}
		})
	}
}
