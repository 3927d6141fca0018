package batch

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rawbatch/rawbatch/internal/bytetext"
	"github.com/rawbatch/rawbatch/internal/rawerr"
	"github.com/rawbatch/rawbatch/lock"
	"github.com/rawbatch/rawbatch/pipeline"
	"github.com/rawbatch/rawbatch/state"
)

// ErrNotOurs is wrapped by the failure of a file one of whose output
// paths holds a file rawbatch did not write: a file that was there before
// (a camera JPEG next to its RAW), or an output another program changed
// or replaced since rawbatch wrote it. --overwrite (Runner.Overwrite)
// writes over it.
// It is rawerr.ErrNotOurs, whose kind is "not-ours".
var ErrNotOurs = rawerr.ErrNotOurs

// ErrRecordNotSaved is wrapped by the failure of a file that was
// converted but whose up-to-date record could not be saved (a read-only
// OUTDIR/.rawbatch/state): without it the next run would convert the file
// again and overlapping runs could not tell who wrote it.
// It is rawerr.ErrRecordNotSaved, whose kind is "record-not-saved".
var ErrRecordNotSaved = rawerr.ErrRecordNotSaved

// ownership is what an output path holds, as far as writing it goes.
type ownership int

const (
	outAbsent  ownership = iota // nothing there, no record
	outDeleted                  // nothing there, but a record: the user deleted it
	outOurs                     // rawbatch's output (record matches, or no record and EXIF Software "rawbatch")
	outForeign                  // a file rawbatch did not write (no record, no rawbatch EXIF)
	outChanged                  // rawbatch wrote it, but it changed since (the record disagrees)
)

// ownerOf tells what the output path o holds. A record that
// disagrees with the file wins over the file's EXIF Software tag: an
// edited file may keep it. A file whose record matches by content but not
// by time has its record refreshed.
func (r *Runner) ownerOf(o Output) ownership {
	var rec *state.Record
	if r.State != nil {
		rec, _ = r.State.Load(o.Rel)
	}
	fi, err := os.Lstat(o.Path)
	if errors.Is(err, fs.ErrNotExist) {
		if rec != nil && !rec.Claim {
			return outDeleted
		}
		return outAbsent
	}
	if err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		// rawbatch writes no links: one at the path is the user's, even
		// when what it points to matches the record.
		return outForeign
	}
	if rec != nil && rec.Claim {
		rec = nil // a claim says nothing of the file (another input's is refused by the caller)
	}
	if rec != nil {
		ok, up, err := state.OutputMatches(rec, o.Path)
		if err != nil {
			return outChanged // unreadable: not provably ours
		}
		if up != nil {
			r.State.Save(up)
		}
		if !ok {
			return outChanged
		}
		return outOurs
	}
	if pipeline.WrittenByRawbatch(o.Path) {
		return outOurs
	}
	return outForeign
}

// verifyReplaced checks, before t's pending outputs that exist are
// replaced, that each is still the file its record describes by content:
// the up-to-date checks trust an unchanged size and modification time
// (stat only), but an edit that kept both would be lost, so a file about
// to be written over anyway is hashed first (against the record's
// OutputHash) and, if it differs, t fails as for an output changed since
// rawbatch wrote it (unless --overwrite). Under EditedKeep such an
// output is dropped from t's pending outputs instead, and when none is
// left the returned result (non-nil) says t's outputs are kept.
func (r *Runner) verifyReplaced(t *Task) (*FileResult, error) {
	if r.State == nil || r.Overwrite {
		return nil, nil
	}
	var keep []int
	for i, o := range t.Outputs {
		if t.Pending != nil && !slices.Contains(t.Pending, i) {
			continue
		}
		rec, err := r.State.Load(o.Rel)
		if err != nil || rec.Claim || rec.OutputHash == "" {
			continue
		}
		fi, err := os.Stat(o.Path)
		if err != nil || !fi.Mode().IsRegular() || fi.Size() != rec.OutputSize || !fi.ModTime().Equal(rec.OutputMTime) {
			continue // absent, or already compared by content (ownerOf)
		}
		if h, _, _, err := state.HashFile(o.Path); err != nil || h != rec.OutputHash {
			if !r.EditedKeep {
				return nil, notOursErr(*t, o, outChanged)
			}
			keep = append(keep, i)
		}
	}
	if len(keep) == 0 {
		return nil, nil
	}
	var pending []int
	for i := range t.Outputs {
		if (t.Pending == nil || slices.Contains(t.Pending, i)) && !slices.Contains(keep, i) {
			pending = append(pending, i)
		}
	}
	if len(pending) == 0 {
		return &FileResult{Task: *t, Status: StatusKept, Reason: ReasonKept}, nil
	}
	t.Pending = pending
	var paths []string
	for _, i := range keep {
		paths = append(paths, t.Outputs[i].Path)
	}
	t.keptNote = keptNote(paths)
	return nil, nil
}

// ReasonKept is the reason of a file whose outputs were edited since
// rawbatch wrote them and are left alone (Runner.EditedKeep).
const ReasonKept = "kept (edited since rawbatch wrote it)"

// CheckReplaced applies verifyReplaced to every task of p still to
// convert, as Run does under the lock, and marks one that would fail
// (Task.Done, failed) or whose outputs are all kept, so that a dry run
// says "would fail" for an output edited keeping its size and time. Call
// it after Relocate, for a dry run only: Run makes the check itself.
func (r *Runner) CheckReplaced(p *Plan) {
	for i := range p.Tasks {
		t := &p.Tasks[i]
		if t.Done != nil || t.Err != nil {
			continue
		}
		kept, err := r.verifyReplaced(t)
		if err != nil {
			t.Done = &FileResult{Task: *t, Status: StatusFailed, Err: err}
		} else if kept != nil {
			t.Done = kept
		}
	}
}

// notOursErr is the failure of t when its output o holds a file rawbatch
// did not write (own is outForeign or outChanged).
func notOursErr(t Task, o Output, own ownership) error {
	if own == outChanged {
		return &wrapped{fmt.Sprintf("%s: its output %s changed since rawbatch wrote it: move it away, or use --overwrite", t.Input, o.Path), ErrNotOurs}
	}
	return &wrapped{fmt.Sprintf("%s: %s exists and was not written by rawbatch; move it away, or use --overwrite to overwrite it", t.Input, o.Path), ErrNotOurs}
}

// wrapped is an error with its own text that unwraps to a sentinel.
type wrapped struct {
	msg string
	err error
}

func (w *wrapped) Error() string { return w.msg }
func (w *wrapped) Unwrap() error { return w.err }

// OutputLockKey is the lock key of an output path relative to OUTDIR:
// slash-separated and case-folded, since exFAT, SMB and macOS volumes
// take names that differ only in case for one file.
func OutputLockKey(rel string) string {
	return "output\x00" + strings.ToLower(strings.ReplaceAll(rel, string(os.PathSeparator), "/"))
}

// lockKeys are t's lock keys, one per output, sorted and without
// duplicates (taken in this order, so two runs never wait on each other
// in a cycle).
func lockKeys(t Task) []string {
	var keys []string
	for _, o := range t.Outputs {
		keys = append(keys, OutputLockKey(o.Rel))
	}
	if len(keys) == 0 {
		keys = append(keys, OutputLockKey(t.OutputRel))
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// testHookBeforeSave, when set (tests), runs before each record is saved
// after a conversion; a non-nil error is taken as the save's.
var testHookBeforeSave func(rec *state.Record) error

// saveRecord saves rec in r.State.
func (r *Runner) saveRecord(rec *state.Record) error {
	if testHookBeforeSave != nil {
		if err := testHookBeforeSave(rec); err != nil {
			return err
		}
	}
	return r.State.Save(rec)
}

// DefaultLockWaitOther is how long rawbatch convert waits, when
// --lock-wait is not given, for a lock held by a run that makes other
// outputs than this run's from the file (Runner.LockWaitOther).
const DefaultLockWaitOther = 10 * time.Minute

func (r *Runner) lockWaitOther() time.Duration {
	if r.LockWaitOther > 0 {
		return r.LockWaitOther
	}
	return r.LockWait
}

// lockDoing says what a run holding t's locks does, for the messages of
// other runs that find them held.
func lockDoing(t Task) string {
	var outs []string
	for _, o := range t.Outputs {
		outs = append(outs, o.Rel)
	}
	if len(outs) == 0 {
		outs = append(outs, t.OutputRel)
	}
	return fmt.Sprintf("converting %s into %s", t.absInput(), strings.Join(outs, ", "))
}

// lockedOtherErr is the failure of a file whose lock is still held, after
// waiting waited, by a run doing other work on its outputs.
func lockedOtherErr(le *lock.LockedError, waited time.Duration) error {
	doing := le.Holder.Doing
	if doing == "" {
		doing = "making other outputs"
	}
	return fmt.Errorf("%w, which is %s (not this run's outputs); gave up after waiting %s (--lock-wait)", le, doing, durationText(waited))
}

// DurationText writes d for messages as durationText does.
func DurationText(d time.Duration) string { return durationText(d) }

// CleanText is a text (a file name, a reason that names one) as rawbatch
// shows it on a terminal, in a log or on the gallery page: control
// characters and bytes that are not UTF-8 written as Go escapes
// (bytetext.Clean).
func CleanText(s string) string { return bytetext.Clean(s) }

// durationText writes d for messages: "300 ms" under a second, else
// seconds as secondsText does ("1 s", "2.5 s", "63 s"); "0 s" for none.
func durationText(d time.Duration) string {
	if d < time.Second {
		if ms := d.Round(time.Millisecond).Milliseconds(); ms > 0 && ms < 1000 {
			return strconv.FormatInt(ms, 10) + " ms"
		}
		if d < time.Millisecond/2 {
			return "0 s"
		}
	}
	return secondsText(d) + " s"
}

// claim saves a claim record (state.Store.Claim) for each output of t to
// be written that has no record yet. The caller holds t's locks. A claim
// that cannot be saved fails the file before it is converted, with
// ErrRecordNotSaved: its record could not be saved either.
func (r *Runner) claim(t Task) error {
	if r.State == nil {
		return nil
	}
	for _, o := range t.pending() {
		if _, err := r.State.Load(o.Rel); err == nil {
			continue // a record (this input's: preflight checked) or a claim
		}
		if err := r.State.Claim(o.Rel, t.Input, t.absInput(), os.Getpid()); err != nil {
			r.unclaim(t)
			return fmt.Errorf("%s: not converted: %w: %w", t.Input, ErrRecordNotSaved, err)
		}
	}
	return nil
}

// unclaim removes the claims of t's outputs that its conversion did not
// replace by records (it failed, was skipped or interrupted).
func (r *Runner) unclaim(t Task) {
	if r.State == nil {
		return
	}
	for _, o := range t.pending() {
		r.State.Unclaim(o.Rel)
	}
}
