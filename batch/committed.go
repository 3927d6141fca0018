package batch

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// A worker commits a file's outputs by renaming each temporary file into
// place, then replies. A worker stopped between the two (a second
// interrupt kills it at once, or it dies) leaves complete outputs with no
// reply. The parent tells them by the outputs' identity: each output path
// is stat'ed before the job starts, and a path that afterwards holds
// another file (another inode, size or modification time, or a file where
// there was none) holds the job's committed output, since the job holds
// the output's lock and its temporary files have other names. This is
// decided in the parent, which writes the records, rather than by making
// the worker hold off the kill during its renames: a SIGKILL cannot be
// deferred, and a worker that dies by a crash gets no say.

// Which case is which: a worker killed by a signal (rawbatch's timeout
// or second interrupt, the OOM killer, a kill -9 from elsewhere) was
// stopped from outside, and what it committed before is complete: the
// job is settled from its outputs (settleStopped). A worker that exited
// by itself without a well-formed reply (a reply it could not encode, a
// fatal signal the Go runtime caught and turned into exit status 2, any
// other exit) is the job's own failure: its outputs may hold what went
// wrong (a picture developed from non-finite numbers), so the file fails
// and the outputs it committed are removed with their records
// (removeCommitted); the next run converts it again.

// outputsBefore is the identity of each output path at a job's start (nil:
// no file there), in the order of the outputs.
type outputsBefore []os.FileInfo

// statOutputs records the identity of each of outs' paths.
func statOutputs(outs []Output) outputsBefore {
	before := make(outputsBefore, len(outs))
	for i, o := range outs {
		if fi, err := os.Lstat(o.Path); err == nil {
			before[i] = fi
		}
	}
	return before
}

// committed reports which of outs (those statOutputs saw as before) now
// hold another regular file than at the job's start: the job's committed
// outputs.
func (before outputsBefore) committed(outs []Output) []Output {
	var done []Output
	for i, o := range outs {
		fi, err := os.Lstat(o.Path)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		if b := before[i]; b != nil && os.SameFile(b, fi) && b.Size() == fi.Size() && b.ModTime().Equal(fi.ModTime()) {
			continue // the file that was there before the job
		}
		done = append(done, o)
	}
	return done
}

// settleStopped decides the outcome of a job whose worker was stopped
// (killed, or died) before it replied, from the outputs it committed
// (before.committed): all of them committed make fr converted (its
// records are then saved as for a reply), with a warning that the
// worker's reply was lost. Only some of them committed leave fr as it is
// (the file is not converted: the next run makes the others) and the
// committed ones in place, complete and unrecorded, each a rawbatch file
// (its EXIF Software), which the next run converts again; fr's reason
// (and a failure's error, then not remembered) says how many are in
// place, and fr.Kept lists them. Removing them would lose an output: an
// earlier run's file at that path was already replaced. It returns
// whether fr became converted.
func settleStopped(fr *FileResult, outs []Output, before outputsBefore, r *Runner) bool {
	done := before.committed(outs)
	if len(done) == 0 {
		return false
	}
	if len(done) < len(outs) {
		note := fmt.Sprintf("%d of its %d outputs were already in place, complete, and are kept (the next run converts it again)", len(done), len(outs))
		fr.Reason = fr.Reason + "; " + note
		if fr.Err != nil && fr.Status == StatusFailed {
			// Its develop had ended: not a failure of the file's to
			// remember, whatever stopped it (known.go).
			fr.Err = outsideError{fmt.Errorf("%w; %s", fr.Err, note)}
		}
		for _, o := range done {
			fr.Kept = append(fr.Kept, o.Path)
		}
		return false
	}
	fr.Status, fr.Err, fr.Reason = StatusConverted, nil, ""
	fr.Result.Warnings = append(fr.Result.Warnings, "its worker was stopped after its outputs were in place, before it replied: recorded from the files in place (no details of the conversion)")
	return true
}

// removeCommitted removes the outputs of outs that a job whose worker
// exited without a reply committed (before.committed), and their records,
// and says so in fr's error. fr has already failed.
func (r *Runner) removeCommitted(fr *FileResult, outs []Output, before outputsBefore) {
	done := before.committed(outs)
	removed := 0
	for _, o := range done {
		if err := os.Remove(o.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			continue
		}
		removed++
		if r.State != nil {
			r.State.Remove(o.Rel)
		}
	}
	if removed > 0 && fr.Err != nil {
		fr.Err = fmt.Errorf("%w (the %d of its outputs it had put in place were removed)", fr.Err, removed)
	}
}
