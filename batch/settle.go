package batch

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// settleSleep waits d or until ctx ends; tests replace it.
var settleSleep = func(ctx context.Context, d time.Duration) {
	select {
	case <-time.After(d):
	case <-ctx.Done():
	}
}

// recent reports whether a file modified at mtime counts as possibly
// still being written under minAge: modified less than minAge ago, a time
// up to 1 s in the future included (a time further in the future is a
// camera clock or time zone that is off, and says nothing).
func recent(mtime time.Time, minAge time.Duration) bool {
	age := time.Since(mtime)
	return minAge > 0 && age >= -time.Second && age < minAge
}

// Settle gives the tasks of p modified less than r.MinAge ago (a card
// copied a moment ago) the rest of their settle time, once for all: it
// waits until the newest of them is MinAge old (at most MinAge, less when
// ctx ends), then marks Task.Settled every such task whose size and
// modification time are still those of the plan, so Triage and Run
// convert it in this run. A task that changed meanwhile is still being
// written, and is left for a later run. It returns how long it waited:
// 0, with no wait and no stat, when no task is recent (an unchanged
// re-run of old files never waits). Call it after PlanBatch, before
// Triage.
func (r *Runner) Settle(ctx context.Context, p *Plan) time.Duration {
	var waiting []int
	var wait time.Duration
	for i, t := range p.Tasks {
		if t.Err != nil || t.Done != nil || t.Size == 0 || !recent(t.ModTime, r.MinAge) {
			continue
		}
		waiting = append(waiting, i)
		wait = max(wait, r.MinAge-max(time.Since(t.ModTime), 0))
	}
	if len(waiting) == 0 {
		return 0
	}
	wait = min(wait, r.MinAge)
	if r.SettleWait != nil && wait >= time.Millisecond { // less is nothing a line would show
		r.SettleWait(len(waiting), wait)
	}
	t0 := time.Now()
	settleSleep(ctx, wait)
	waited := time.Since(t0)
	if ctx.Err() != nil {
		return waited
	}
	for _, i := range waiting {
		t := &p.Tasks[i]
		settleFault(t.Input)
		fi, err := os.Stat(t.Input)
		if err == nil && fi.Size() == t.Size && fi.ModTime().Equal(t.ModTime) {
			t.Settled = true
		}
	}
	return waited
}

// settleFault applies the test-only fault hook "grow=NAME" (FaultEnv): the
// input whose base name is NAME gets one more byte after Settle's wait, as
// a copy still in progress would.
func settleFault(input string) {
	for _, f := range strings.Split(os.Getenv(FaultEnv), ",") {
		kind, name, _ := strings.Cut(f, "=")
		if kind != "grow" || name != filepath.Base(input) {
			continue
		}
		if fh, err := os.OpenFile(input, os.O_WRONLY|os.O_APPEND, 0); err == nil {
			fh.Write([]byte{0})
			fh.Close()
		}
	}
}
