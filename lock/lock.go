// Package lock provides one advisory, non-blocking lock per key (rawbatch
// uses one per output path, and takes all of a file's at once with
// TryLockAll), so overlapping runs (cron, CI) never write the same output
// at the same time.
//
// A lock is a flock(2) LOCK_EX|LOCK_NB on a file in a lock directory; the
// file is named by the first 32 hex digits of the SHA-256 of the key plus
// ".lock", so any key (UTF-8, spaces, newlines, leading dashes, "..") maps
// to a safe, fixed-length name. The kernel drops a flock when its holder
// exits or is killed, so a crashed run leaves no stale lock (at most a
// stale file, which the next locker reuses and removes).
//
// flock locks belong to an open file description, not to a process: every
// TryLock opens the file anew, so two goroutines of one process exclude
// each other exactly like two processes do. The descriptor is
// close-on-exec, so child processes do not inherit the lock.
//
// # Removing lock files safely
//
// Unlock removes the lock file so that files do not accumulate. Removing
// naively races: a locker that opened the file just before the holder
// unlinked it would then lock the orphaned inode while a third locker
// creates and locks a new file under the same name, and both would run.
// Two rules make removal safe:
//
//  1. The holder unlinks the path while it still holds the flock, and only
//     if the path still names the holder's inode; then it releases.
//  2. After flock succeeds, a locker checks that the path still names the
//     inode it locked (fstat of the descriptor vs. stat of the path). If
//     not (the file was unlinked, possibly replaced, in between), it closes
//     the descriptor and starts over.
//
// So a lock is only ever "held" on the inode the path currently names, and
// the path is changed only by the holder of that inode. The same check on
// a failed flock tells a live holder from one that is just unlocking (its
// file is already unlinked), in which case TryLock retries at once instead
// of reporting ErrLocked.
//
// # Files others may have planted
//
// Lock names are predictable and the directory may be shared (a group's,
// under umask 002), so nothing found at a lock path is trusted: it is
// opened with O_NOFOLLOW (a symbolic link is refused, its target never
// opened) and O_NONBLOCK, must be a regular file, and the holder record is
// written only into a file created by this locker (O_EXCL) or owned by the
// current user with no other name. Another user's file (a stale lock of a
// colleague's killed run, or a hard link) is unlinked while its lock is
// held and replaced, never rewritten. Open refuses a lock directory that is
// a symbolic link, or owned by a user who is neither the current one nor
// root and by a group the current user is not in (CheckDir).
//
// The lock is advisory: it protects only against other users of this
// package (or of flock on the same files). flock may not be honoured
// between hosts on some network filesystems.
package lock

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// ErrLocked: the key is locked by another holder (another process, or
// another Lock of this process).
var ErrLocked = errors.New("locked by another run")

// errUnlocked is returned by a second Unlock of the same Lock.
var errUnlocked = errors.New("lock: already unlocked")

// maxRecord bounds how much of a lock file is read as the holder record, in bytes.
const maxRecord = 64 << 10

// Backoff parameters of Lock and Backoff.
const (
	backoffStart  = 50 * time.Millisecond
	backoffCap    = 2 * time.Second
	backoffJitter = 0.2 // ±20 %
)

// Holder is the record a lock holder writes into its lock file, as JSON
// ({"pid":…,"host":…,"key":…,"started":"RFC 3339"}).
type Holder struct {
	PID     int       `json:"pid"`     // process id of the holder
	Host    string    `json:"host"`    // os.Hostname of the holder; "" if unknown
	Key     string    `json:"key"`     // the key passed to TryLock/Lock; invalid UTF-8 bytes read back as U+FFFD
	Started time.Time `json:"started"` // when the lock was taken (RFC 3339 with nanoseconds)
	// Note is what the holder said it is doing (TryLockNote), for other
	// lockers to decide whether to wait; "" when not given.
	Note string `json:"note,omitempty"`
	// Doing says for people what the holder is doing ("converting
	// in/x.dng into x.jpg"), for messages; "" when not given.
	Doing string `json:"doing,omitempty"`
}

// LockedError is returned when the key is held by someone else; it
// unwraps to ErrLocked. Holder is the holder's record; its PID is 0 when
// the record could not be read (e.g. the holder had not written it yet).
type LockedError struct {
	Key    string
	Holder Holder
}

// Error returns "locked by another run (pid 123 on host)", or
// "locked by another run" when the holder is unknown.
func (e *LockedError) Error() string {
	switch {
	case e.Holder.PID == 0:
		return ErrLocked.Error()
	case e.Holder.Host == "":
		return fmt.Sprintf("%s (pid %d)", ErrLocked, e.Holder.PID)
	default:
		return fmt.Sprintf("%s (pid %d on %s)", ErrLocked, e.Holder.PID, e.Holder.Host)
	}
}

// Unwrap returns ErrLocked.
func (e *LockedError) Unwrap() error { return ErrLocked }

// Dir is a lock directory. It is safe for concurrent use.
type Dir struct {
	path string
}

// Open returns the lock directory dir, creating it and its parents
// (mode 0777 minus the umask, like mkdir: runs of a group that shares
// OUTDIR under umask 002 lock each other's files) if needed. Errors are those of os.MkdirAll,
// e.g. when dir or a parent is a regular file or not writable, and
// CheckDir's: dir itself must not be a symbolic link nor another user's
// directory.
func Open(dir string) (*Dir, error) {
	if dir == "" {
		return nil, errors.New("lock: empty directory name")
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o777); err != nil {
		return nil, fmt.Errorf("lock: %w", err)
	}
	// Mkdir, not MkdirAll, on dir itself: MkdirAll would accept a
	// symbolic link to a directory there.
	if err := os.Mkdir(dir, 0o777); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("lock: %w", err)
	}
	if err := CheckDir(dir); err != nil {
		return nil, fmt.Errorf("lock: %w", err)
	}
	return &Dir{path: dir}, nil
}

// CheckDir refuses a directory that someone else could have planted to
// redirect what is written into it: dir (not followed if it is a symbolic
// link) must be a directory, and owned by the current user, by root, or by
// one of the current user's groups (a directory a group shares, under
// umask 002, which its members may use: what they could plant in it, each
// file is checked for on opening). The error names dir and says why.
func CheckDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		return fmt.Errorf("%s is a symbolic link; refusing to follow it (it may have been planted to redirect rawbatch's writes): replace it with a directory", dir)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	uid := os.Getuid()
	if int(st.Uid) == uid || st.Uid == 0 {
		return nil
	}
	if int(st.Gid) == os.Getgid() {
		return nil
	}
	if groups, err := os.Getgroups(); err == nil && slices.Contains(groups, int(st.Gid)) {
		return nil
	}
	return fmt.Errorf("%s is owned by uid %d and group %d, neither the current user (uid %d) nor one of its groups; refusing to use it (another user may have created it to redirect rawbatch's writes)", dir, st.Uid, st.Gid, uid)
}

// Path returns the directory given to Open.
func (d *Dir) Path() string { return d.path }

// FileName returns the name of the lock file of key inside the directory:
// the first 32 hex digits of SHA-256(key) followed by ".lock".
func FileName(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])[:32] + ".lock"
}

// File returns the path of the lock file of key.
func (d *Dir) File(key string) string { return filepath.Join(d.path, FileName(key)) }

// maxRestarts bounds how often TryLock starts over because the lock file
// was replaced under it; each restart means another locker made progress,
// so reaching it means a filesystem whose inode identities are unreliable.
const maxRestarts = 10000

// testHookAfterOpen, if set, runs in TryLock between opening the lock
// file and flock; tests use it to force the unlink race.
var testHookAfterOpen func()

// TryLock takes the lock of key without blocking. If someone else holds
// it, the error is a *LockedError (errors.Is(err, ErrLocked)) naming the
// holder. Other errors come from creating, locking or writing the lock
// file (e.g. a missing or read-only directory); no lock is held then.
// The caller must Unlock the returned Lock.
func (d *Dir) TryLock(key string) (*Lock, error) { return d.TryLockNote(key, "") }

// TryLockNote is TryLock with a note written into the holder record
// (Holder.Note), which others who find the lock held read back from their
// *LockedError.
func (d *Dir) TryLockNote(key, note string) (*Lock, error) { return d.tryLock(key, note, "") }

func (d *Dir) tryLock(key, note, doing string) (*Lock, error) {
	path := d.File(key)
	for range maxRestarts {
		f, created, err := openLockFile(path)
		if err != nil {
			return nil, fmt.Errorf("lock: %w", err)
		}
		if testHookAfterOpen != nil {
			testHookAfterOpen()
		}
		err = flock(f, unix.LOCK_EX|unix.LOCK_NB)
		if err != nil && !errors.Is(err, unix.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock: flock %s: %w", path, err)
		}
		current, serr := samePath(f, path)
		if serr != nil {
			f.Close()
			return nil, fmt.Errorf("lock: %w", serr)
		}
		if !current {
			// The file was unlinked (and maybe replaced) by its holder
			// between our open and flock: what we locked, or found locked,
			// is no longer the lock. Start over on the current path.
			f.Close()
			continue
		}
		if err != nil { // EWOULDBLOCK on the current file: held
			h, _ := readHolder(f)
			f.Close()
			return nil, &LockedError{Key: key, Holder: h}
		}
		if !created {
			if mine, err := ownFile(f); err != nil {
				f.Close()
				return nil, fmt.Errorf("lock: %w", err)
			} else if !mine {
				// A file left by another user's run (a group sharing the
				// directory), or linked here by someone: never write into
				// it. We hold its lock, so we may unlink it (rule 1); then
				// start over with a file of our own.
				if err := os.Remove(path); err != nil {
					f.Close()
					return nil, fmt.Errorf("lock: %s is not ours to rewrite and cannot be removed: %w", path, err)
				}
				_ = flock(f, unix.LOCK_UN)
				f.Close()
				continue
			}
		}
		l := &Lock{f: f, path: path, key: key}
		if err := l.writeRecord(note, doing); err != nil {
			l.Unlock()
			return nil, fmt.Errorf("lock: writing holder record to %s: %w", path, err)
		}
		return l, nil
	}
	return nil, fmt.Errorf("lock: %s keeps being replaced while locking (unreliable inode numbers on this filesystem?)", path)
}

// openLockFile opens the lock file path read-write, creating it (mode
// 0666 minus the umask, as the directory: another user of the group may
// open it read-write under umask 002) with O_EXCL if it does not exist;
// created says so. It never follows a symbolic link at path (O_NOFOLLOW:
// one planted there would make the holder record overwrite its target),
// never blocks on a FIFO, and refuses anything but a regular file.
func openLockFile(path string) (f *os.File, created bool, err error) {
	const flags = unix.O_RDWR | unix.O_NOFOLLOW | unix.O_CLOEXEC | unix.O_NONBLOCK
	for range maxRestarts {
		fd, err := unix.Open(path, flags|unix.O_CREAT|unix.O_EXCL, 0o666)
		if err == nil {
			created = true
		} else if err == unix.EEXIST {
			fd, err = unix.Open(path, flags, 0)
			if err == unix.ENOENT {
				continue // removed between the two opens: create it
			}
		}
		if err == unix.ELOOP {
			return nil, false, fmt.Errorf("%s is a symbolic link; refusing to follow it (it may have been planted to make rawbatch overwrite its target): remove it", path)
		}
		if err != nil {
			return nil, false, &os.PathError{Op: "open", Path: path, Err: err}
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return nil, false, &os.PathError{Op: "fstat", Path: path, Err: err}
		}
		if st.Mode&unix.S_IFMT != unix.S_IFREG {
			unix.Close(fd)
			return nil, false, fmt.Errorf("%s is not a regular file; refusing to use it as a lock file: remove it", path)
		}
		// Back to blocking mode: O_NONBLOCK was only for opening.
		if err := unix.SetNonblock(fd, false); err != nil {
			unix.Close(fd)
			return nil, false, &os.PathError{Op: "fcntl", Path: path, Err: err}
		}
		return os.NewFile(uintptr(fd), path), created, nil
	}
	return nil, false, fmt.Errorf("%s keeps appearing and disappearing while opening it", path)
}

// ownFile reports whether f is a lock file this user may rewrite: owned by
// the current user and with no other name (a hard link to another file
// of the user's would make the rewrite destroy that file).
func ownFile(f *os.File) (bool, error) {
	fi, err := f.Stat()
	if err != nil {
		return false, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return false, nil
	}
	return int(st.Uid) == os.Getuid() && st.Nlink == 1, nil
}

// Lock takes the lock of key, retrying TryLock with Backoff (50 ms,
// doubling, capped at 2 s, ±20% jitter) while it is held, until wait has
// elapsed (one last try is made at the end of wait) or ctx ends. wait 0
// (or negative) means a single try, as TryLock. It returns ctx.Err() if
// ctx ends first (or has already ended), the last *LockedError
// (errors.Is(err, ErrLocked)) if the lock is still held after wait, or
// any other error of TryLock at once.
func (d *Dir) Lock(ctx context.Context, key string, wait time.Duration) (*Lock, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(wait)
	var timer *time.Timer
	for attempt := 0; ; attempt++ {
		l, err := d.TryLock(key)
		if err == nil || !errors.Is(err, ErrLocked) {
			return l, err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return nil, err
		}
		sleep := min(Backoff(attempt), left)
		if timer == nil {
			timer = time.NewTimer(sleep)
			defer timer.Stop()
		} else {
			timer.Reset(sleep)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-timer.C:
		}
	}
}

// Backoff returns the delay before retry number attempt (0-based):
// 50 ms·2^attempt, capped at 2 s, then scaled by a random factor in
// [0.8, 1.2) — so at most 2.4 s. A negative attempt counts as 0. It is
// safe for concurrent use.
func Backoff(attempt int) time.Duration {
	d := backoffCap
	if attempt < 0 {
		attempt = 0
	}
	if attempt < 16 { // beyond, the shift is way past the cap (and could overflow)
		d = min(backoffStart<<attempt, backoffCap)
	}
	f := 1 - backoffJitter + 2*backoffJitter*rand.Float64()
	return time.Duration(float64(d) * f)
}

// Lock is a held lock. Its methods are safe for concurrent use.
type Lock struct {
	mu   sync.Mutex
	f    *os.File // nil once unlocked
	path string
	key  string
	rec  Holder
}

// Key returns the key the lock was taken for.
func (l *Lock) Key() string { return l.key }

// Holder returns the record written into the lock file.
func (l *Lock) Holder() Holder { return l.rec }

// Unlock removes the lock file (while still holding the lock, and only if
// the path still names this lock's file) and releases the lock. The lock
// is released even when an error is returned; errors come from removing
// or closing the file. A second Unlock returns an error and does nothing.
func (l *Lock) Unlock() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return errUnlocked
	}
	f := l.f
	l.f = nil
	var errs []error
	// Only the holder of the inode the path names may unlink it. If the
	// path is gone or names another file (someone removed the directory
	// by hand, say), leave it alone.
	if same, err := samePath(f, l.path); err != nil {
		errs = append(errs, err)
	} else if same {
		if err := os.Remove(l.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	// Closing the only descriptor of the open file description releases
	// the flock; LOCK_UN first is belt and braces.
	_ = flock(f, unix.LOCK_UN)
	if err := f.Close(); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("lock: unlock %s: %w", l.path, err)
	}
	return nil
}

// writeRecord truncates the lock file and writes the holder record.
func (l *Lock) writeRecord(note, doing string) error {
	host, _ := os.Hostname()
	l.rec = Holder{PID: os.Getpid(), Host: host, Key: l.key, Started: time.Now().Round(0), Note: note, Doing: doing}
	b, err := json.Marshal(l.rec)
	if err != nil {
		return err
	}
	if err := l.f.Truncate(0); err != nil {
		return err
	}
	_, err = l.f.WriteAt(append(b, '\n'), 0)
	return err
}

// readHolder reads the record of the holder of f's lock.
func readHolder(f *os.File) (Holder, error) {
	b, err := io.ReadAll(io.NewSectionReader(f, 0, maxRecord))
	if err != nil {
		return Holder{}, err
	}
	var h Holder
	if err := json.Unmarshal(b, &h); err != nil {
		return Holder{}, err
	}
	if h.PID <= 0 {
		return Holder{}, errors.New("lock: holder record without pid")
	}
	return h, nil
}

// samePath reports whether path currently names the file open as f.
// A missing path is reported as false without error.
func samePath(f *os.File, path string) (bool, error) {
	fi, err := f.Stat()
	if err != nil {
		return false, err
	}
	pi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return os.SameFile(fi, pi), nil
}

// flock applies how (unix.LOCK_*) to f, retrying on EINTR.
func flock(f *os.File, how int) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		for {
			ferr = unix.Flock(int(fd), how)
			if ferr != unix.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	return ferr
}
