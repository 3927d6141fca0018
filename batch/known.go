package batch

import (
	"errors"

	"github.com/rawbatch/rawbatch/internal/rawerr"
	"github.com/rawbatch/rawbatch/pipeline"
	"github.com/rawbatch/rawbatch/state"
)

// ReasonKnownFailure starts the reason of a file skipped as a known
// failure (Runner.KnownFailuresSkip), followed by its earlier failure.
const ReasonKnownFailure = "known failure (same content and settings as when it failed): "

// rememberedKinds are the failures of what a file holds, which the same
// content fails again with the same settings: those a failure record
// keeps (Runner.remember). Others (an output in the way, a lock, a
// timeout under load, no space) say nothing of the file.
var rememberedKinds = []error{rawerr.ErrEmpty, rawerr.ErrNotRaw, rawerr.ErrUnsupported, rawerr.ErrCorrupt, rawerr.ErrCrashed}

func remembered(err error) bool {
	var o outsideError
	if errors.As(err, &o) {
		return false
	}
	for _, k := range rememberedKinds {
		if errors.Is(err, k) {
			return true
		}
	}
	return false
}

// outsideError is a failure that says nothing of the file whatever its
// kind (a crash, for the report and the exit status): a worker killed by
// a signal another process sent (kill -9, a container's stop), or one
// stopped after it had put some of the file's outputs in place (its
// develop had ended). It is not remembered: the next run converts the
// file again, with --known-failures skip too.
type outsideError struct{ error }

func (e outsideError) Unwrap() error { return e.error }

// failureSettings is the settings hash of a failure record of t: the
// run's and every output's (its variants).
func (r *Runner) failureSettings(t Task) string {
	parts := []string{r.settingsHashOf(t)}
	for _, o := range t.Outputs {
		parts = append(parts, outputHash(r.taskSettings(t), o.Variant))
	}
	return state.HashSettings(parts...)
}

// remember keeps in OUTDIR's records what a finished file tells of later
// runs: a failure of what it holds is saved as its failure record (with
// its content's hash, taken now, and only while it is the content
// planned), a conversion removes an earlier one. It is done whatever
// KnownFailuresSkip says, so that a run with it knows the failures of
// runs without.
func (r *Runner) remember(fr FileResult) {
	if r.State == nil || fr.Input == "" {
		return
	}
	switch fr.Status {
	case StatusConverted:
		r.State.RemoveFailure(fr.absInput())
	case StatusFailed:
		if !remembered(fr.Err) {
			return
		}
		h, size, mtime, err := state.HashFile(fr.Input)
		if err != nil || (fr.Size != 0 && (size != fr.Size || !mtime.Equal(fr.ModTime))) {
			return // changed since it was planned: not what failed
		}
		r.State.SaveFailure(&state.Failure{Input: fr.Input, InputAbs: fr.absInput(), InputSize: size, InputMTime: mtime, InputHash: h,
			SettingsHash: r.failureSettings(fr.Task), Rawbatch: r.Version, LibRaw: pipeline.LibRawInfo().Version,
			Kind: rawerr.Kind(fr.Err), Message: fr.Err.Error()})
	}
}

// knownFailure returns the result of t when KnownFailuresSkip is set and
// t's input failed before with the same content, settings and versions
// (state.Store.KnownFailure): StatusKnownFailure, its error the earlier
// one's text and kind. nil otherwise.
func (r *Runner) knownFailure(t Task) *FileResult {
	if !r.KnownFailuresSkip || r.State == nil {
		return nil
	}
	w := state.Want{Input: t.Input, InputAbs: t.absInput(), Rawbatch: r.Version, LibRaw: pipeline.LibRawInfo().Version}
	f := r.State.KnownFailure(w, r.failureSettings(t))
	if f == nil {
		return nil
	}
	return &FileResult{Task: t, Status: StatusKnownFailure, Reason: ReasonKnownFailure + f.Message,
		Err: &wrapped{ReasonKnownFailure + f.Message, rawerr.FromKind(f.Kind)}}
}
