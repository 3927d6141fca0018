package lock

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"
)

func openDir(t *testing.T) *Dir {
	t.Helper()
	d, err := Open(filepath.Join(t.TempDir(), "out", ".rawbatch", "locks"))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// lockFiles lists the files left in the lock directory.
func lockFiles(t *testing.T, d *Dir) []string {
	t.Helper()
	ents, err := os.ReadDir(d.Path())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

func wantLocked(t *testing.T, err error) *LockedError {
	t.Helper()
	var le *LockedError
	if !errors.As(err, &le) {
		t.Fatalf("got error %v, want *LockedError", err)
	}
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("%v does not unwrap to ErrLocked", err)
	}
	return le
}

func TestOpen(t *testing.T) {
	d := openDir(t)
	if fi, err := os.Stat(d.Path()); err != nil || !fi.IsDir() {
		t.Fatalf("lock dir not created: %v", err)
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(filepath.Join(file, "locks")); err == nil {
		t.Fatal("Open under a regular file succeeded")
	}
}

func TestTryLockSameProcess(t *testing.T) {
	d := openDir(t)
	const key = "2024/IMG_0001.CR2"
	host, _ := os.Hostname()

	l, err := d.TryLock(key)
	if err != nil {
		t.Fatal(err)
	}
	// The record on disk.
	b, err := os.ReadFile(d.File(key))
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatalf("record %q: %v", b, err)
	}
	if raw["pid"] != float64(os.Getpid()) || raw["host"] != host || raw["key"] != key {
		t.Errorf("record %s: want pid %d, host %q, key %q", b, os.Getpid(), host, key)
	}
	if s, _ := raw["started"].(string); s == "" {
		t.Errorf("record %s: no started time", b)
	} else if _, err := time.Parse(time.RFC3339, s); err != nil {
		t.Errorf("started %q is not RFC 3339: %v", s, err)
	}

	// A second open of the same process conflicts.
	l2, err := d.TryLock(key)
	if err == nil {
		l2.Unlock()
		t.Fatal("second TryLock of a held key succeeded")
	}
	le := wantLocked(t, err)
	h := le.Holder
	if h.PID != os.Getpid() || h.Host != host || h.Key != key || le.Key != key {
		t.Errorf("holder %+v (key %q), want pid %d host %q key %q", h, le.Key, os.Getpid(), host, key)
	}
	if time.Since(h.Started) < 0 || time.Since(h.Started) > time.Minute {
		t.Errorf("holder started %v, want about now", h.Started)
	}
	if want := fmt.Sprintf("locked by another run (pid %d on %s)", os.Getpid(), host); err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}

	// A different key is independent.
	other, err := d.TryLock(key + "x")
	if err != nil {
		t.Fatalf("other key: %v", err)
	}
	if err := other.Unlock(); err != nil {
		t.Fatal(err)
	}

	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(); err == nil {
		t.Error("second Unlock returned nil")
	}
	if files := lockFiles(t, d); len(files) != 0 {
		t.Errorf("lock files left after Unlock: %v", files)
	}
	l, err = d.TryLock(key)
	if err != nil {
		t.Fatalf("TryLock after Unlock: %v", err)
	}
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
}

func TestLockedErrorUnreadableRecord(t *testing.T) {
	e := &LockedError{Key: "k"}
	if got := e.Error(); got != "locked by another run" {
		t.Errorf("Error() = %q", got)
	}
	// A holder that has not written its record yet (empty file).
	d := openDir(t)
	const key = "k"
	l, err := d.TryLock(key)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock()
	if err := os.Truncate(d.File(key), 0); err != nil {
		t.Fatal(err)
	}
	_, err = d.TryLock(key)
	le := wantLocked(t, err)
	if le.Holder.PID != 0 || err.Error() != "locked by another run" {
		t.Errorf("holder %+v, error %q; want unknown holder", le.Holder, err)
	}
}

// TestHelperProcess is not a test: TestCrossProcess runs the test binary
// as a child that takes a lock, reports "locked <pid>" and holds it until
// its stdin closes or it is killed.
func TestHelperProcess(t *testing.T) {
	if os.Getenv("RAWBATCH_LOCK_HELPER") != "1" {
		t.Skip("helper process for TestCrossProcess")
	}
	d, err := Open(os.Getenv("RAWBATCH_LOCK_DIR"))
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	if _, err := d.TryLock(os.Getenv("RAWBATCH_LOCK_KEY")); err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	fmt.Println("locked", os.Getpid())
	bufio.NewReader(os.Stdin).ReadString('\n') // until the parent goes away
	os.Exit(0)
}

func TestCrossProcess(t *testing.T) {
	d := openDir(t)
	const key = "shoot/IMG 0002.NEF"
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(),
		"RAWBATCH_LOCK_HELPER=1",
		"RAWBATCH_LOCK_DIR="+d.Path(),
		"RAWBATCH_LOCK_KEY="+key)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	defer func() {
		if !killed {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if want := fmt.Sprintf("locked %d\n", cmd.Process.Pid); line != want {
		t.Fatalf("child said %q (%v), want %q", line, err, want)
	}

	_, err = d.TryLock(key)
	le := wantLocked(t, err)
	if le.Holder.PID != cmd.Process.Pid {
		t.Fatalf("holder pid %d, want the child's %d", le.Holder.PID, cmd.Process.Pid)
	}
	if !strings.Contains(err.Error(), fmt.Sprintf("(pid %d ", cmd.Process.Pid)) {
		t.Errorf("error %q does not name the child's pid", err)
	}

	// SIGKILL: no Unlock runs, the file stays, but the kernel drops the flock.
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	killed = true
	if files := lockFiles(t, d); len(files) != 1 {
		t.Logf("files after SIGKILL: %v (expected the child's file to remain)", files)
	}
	l, err := d.TryLock(key) // at once: no waiting, no stale lock
	if err != nil {
		t.Fatalf("TryLock after the holder was killed: %v", err)
	}
	if h := l.Holder(); h.PID != os.Getpid() {
		t.Errorf("new holder pid %d, want ours %d", h.PID, os.Getpid())
	}
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
	if files := lockFiles(t, d); len(files) != 0 {
		t.Errorf("lock files left: %v", files)
	}
}

func TestLockWait(t *testing.T) {
	d := openDir(t)
	const key = "a.ARW"
	ctx := context.Background()

	t.Run("released", func(t *testing.T) {
		h, err := d.TryLock(key)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			time.Sleep(300 * time.Millisecond)
			done <- h.Unlock()
		}()
		start := time.Now()
		l, err := d.Lock(ctx, key, 2*time.Second)
		elapsed := time.Since(start)
		if err != nil {
			t.Fatalf("Lock: %v after %v", err, elapsed)
		}
		defer l.Unlock()
		if elapsed < 250*time.Millisecond {
			t.Errorf("Lock succeeded after %v, while held for 300 ms", elapsed)
		}
		if elapsed > 1500*time.Millisecond {
			t.Errorf("Lock took %v for a lock released after 300 ms", elapsed)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})

	h, err := d.TryLock(key)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Unlock()

	t.Run("timeout", func(t *testing.T) {
		start := time.Now()
		l, err := d.Lock(ctx, key, 100*time.Millisecond)
		elapsed := time.Since(start)
		if err == nil {
			l.Unlock()
			t.Fatal("Lock of a held key succeeded")
		}
		wantLocked(t, err)
		if elapsed < 90*time.Millisecond || elapsed > time.Second {
			t.Errorf("gave up after %v, want about 100 ms", elapsed)
		}
	})

	t.Run("zero wait", func(t *testing.T) {
		tries := 0
		testHookAfterOpen = func() { tries++ }
		defer func() { testHookAfterOpen = nil }()
		_, err := d.Lock(ctx, key, 0)
		wantLocked(t, err)
		if tries != 1 {
			t.Errorf("wait 0 made %d tries, want 1", tries)
		}
	})

	t.Run("cancelled", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := d.Lock(cctx, key, 2*time.Second); err != context.Canceled {
			t.Errorf("got %v, want context.Canceled", err)
		}
	})

	t.Run("cancelled while waiting", func(t *testing.T) {
		cctx, cancel := context.WithTimeout(ctx, 150*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := d.Lock(cctx, key, 10*time.Second)
		if err != context.DeadlineExceeded {
			t.Errorf("got %v, want context.DeadlineExceeded", err)
		}
		if elapsed := time.Since(start); elapsed > time.Second {
			t.Errorf("returned %v after the context ended", elapsed)
		}
	})
}

func TestBackoff(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct {
		attempt int
		base    time.Duration
	}{
		{-5, 50 * ms}, {0, 50 * ms}, {1, 100 * ms}, {2, 200 * ms}, {3, 400 * ms},
		{4, 800 * ms}, {5, 1600 * ms}, {6, 2000 * ms}, {10, 2000 * ms},
		{63, 2000 * ms}, {64, 2000 * ms}, {1 << 30, 2000 * ms},
	} {
		lo := time.Duration(float64(c.base) * 0.8)
		hi := time.Duration(float64(c.base) * 1.2)
		seen := map[time.Duration]bool{}
		for range 200 {
			got := Backoff(c.attempt)
			if got < lo || got > hi {
				t.Fatalf("Backoff(%d) = %v, want in [%v, %v]", c.attempt, got, lo, hi)
			}
			seen[got] = true
		}
		if len(seen) < 10 {
			t.Errorf("Backoff(%d): only %d distinct values in 200 calls, want jitter", c.attempt, len(seen))
		}
	}
}

// TestUnlinkRace hammers one key from many goroutines. Each TryLock opens
// the file anew, so goroutines contend exactly like processes do, and
// every Unlock removes the file: a locker that locks an unlinked inode
// would enter the critical section next to one holding the new file.
func TestUnlinkRace(t *testing.T) {
	d := openDir(t)
	const (
		workers    = 8
		iterations = 200
		key        = "hot/key.DNG"
	)
	var (
		inside     atomic.Bool
		violations atomic.Int64
		retries    atomic.Int64
		counter    int // guarded by the lock alone; inside orders the accesses for -race
		wg         sync.WaitGroup
		errc       = make(chan error, workers)
	)
	for range workers {
		wg.Go(func() {
			for range iterations {
				var l *Lock
				for {
					var err error
					l, err = d.TryLock(key)
					if err == nil {
						break
					}
					if !errors.Is(err, ErrLocked) {
						errc <- err
						return
					}
					retries.Add(1)
				}
				if !inside.CompareAndSwap(false, true) {
					violations.Add(1)
				} else {
					c := counter
					time.Sleep(time.Microsecond) // widen the window
					counter = c + 1
					inside.Store(false)
				}
				if err := l.Unlock(); err != nil {
					errc <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	if v := violations.Load(); v > 0 {
		t.Fatalf("%d times two holders were inside the critical section", v)
	}
	if counter != workers*iterations {
		t.Fatalf("counter = %d, want %d", counter, workers*iterations)
	}
	if files := lockFiles(t, d); len(files) != 0 {
		t.Fatalf("lock files left: %v", files)
	}
	t.Logf("%d contended TryLocks", retries.Load())
}

// TestUnlinkRaceDeterministic forces the interleaving the inode check is
// for: B opens the file, A unlocks (unlinking it), C locks a new file under
// the same name, then B's flock succeeds on the orphaned inode. B must not
// get the lock; it must start over and find C's.
func TestUnlinkRaceDeterministic(t *testing.T) {
	d := openDir(t)
	const key = "race.CR3"
	a, err := d.TryLock(key)
	if err != nil {
		t.Fatal(err)
	}
	var c *Lock
	fired := false
	testHookAfterOpen = func() { // runs in B's TryLock, after its open
		if fired {
			return
		}
		fired = true
		if err := a.Unlock(); err != nil {
			t.Error(err)
		}
		var err error
		if c, err = d.TryLock(key); err != nil {
			t.Errorf("C: %v", err)
		}
	}
	defer func() { testHookAfterOpen = nil }()

	b, err := d.TryLock(key) // B
	if c == nil {
		t.Fatal("hook did not run")
	}
	if err == nil {
		b.Unlock()
		t.Fatal("B and C both hold the lock: B locked the unlinked file")
	}
	le := wantLocked(t, err)
	if le.Holder.PID != os.Getpid() || !le.Holder.Started.Equal(c.Holder().Started) {
		t.Errorf("B sees holder %+v, want C %+v", le.Holder, c.Holder())
	}
	if err := c.Unlock(); err != nil {
		t.Fatal(err)
	}
	if files := lockFiles(t, d); len(files) != 0 {
		t.Fatalf("lock files left: %v", files)
	}
}

// TestUnlockKeepsReplacedFile: Unlock must not remove a file that is no
// longer its own (here: the directory was cleaned by hand and another
// locker created a new file).
func TestUnlockKeepsReplacedFile(t *testing.T) {
	d := openDir(t)
	const key = "k"
	a, err := d.TryLock(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(d.File(key)); err != nil {
		t.Fatal(err)
	}
	b, err := d.TryLock(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Unlock(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(d.File(key)); err != nil {
		t.Fatalf("A's Unlock removed B's file: %v", err)
	}
	if _, err := d.TryLock(key); !errors.Is(err, ErrLocked) {
		t.Fatalf("after A's Unlock, B's lock is gone: %v", err)
	}
	if err := b.Unlock(); err != nil {
		t.Fatal(err)
	}
}

func TestKeyFileNames(t *testing.T) {
	d := openDir(t)
	keys := []string{
		"IMG_0001.CR2", "img_0001.cr2", "dir/IMG_0001.CR2", `dir\IMG_0001.CR2`,
		"Ünïcödé/写真 1.NEF", "with space.ARW", "with  space.ARW",
		"with\nnewline.ARW", "with\nnewline.ARW\n", "-rf", "--help", "-",
		"", ".", "..", "../../etc/passwd", "/abs/path.DNG", "a\x00b", "\xff\xfe",
		strings.Repeat("long/", 2000) + "x.RAF",
	}
	name := regexp.MustCompile(`^[0-9a-f]{32}\.lock$`)
	seen := map[string]string{}
	var held []*Lock
	defer func() {
		for _, l := range held {
			l.Unlock()
		}
	}()
	for _, k := range keys {
		n := FileName(k)
		if !name.MatchString(n) {
			t.Errorf("key %q: file name %q", k, n)
		}
		if prev, ok := seen[n]; ok {
			t.Errorf("keys %q and %q share file %s", prev, k, n)
		}
		seen[n] = k
		if got := d.File(k); filepath.Dir(got) != filepath.Clean(d.Path()) {
			t.Errorf("key %q: file %s is outside the lock dir", k, got)
		}
		l, err := d.TryLock(k)
		if err != nil {
			t.Fatalf("TryLock(%q): %v", k, err)
		}
		held = append(held, l)
		// The record round-trips a UTF-8 key exactly (JSON turns invalid
		// bytes into U+FFFD); LockedError.Key is always exact.
		_, err = d.TryLock(k)
		le := wantLocked(t, err)
		if le.Key != k {
			t.Errorf("LockedError.Key %q, want %q", le.Key, k)
		}
		if utf8.ValidString(k) && le.Holder.Key != k || !utf8.ValidString(le.Holder.Key) {
			t.Errorf("record key %q, want %q", le.Holder.Key, k)
		}
	}
	if files := lockFiles(t, d); len(files) != len(keys) {
		t.Errorf("%d files for %d keys: %v", len(files), len(keys), files)
	}
	// SHA-256("abc") = ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad
	if got, want := FileName("abc"), "ba7816bf8f01cfea414140de5dae2223.lock"; got != want {
		t.Errorf("FileName(%q) = %q, want %q", "abc", got, want)
	}
}

// TestTryLockNote: the note a holder gives is read back by the locker that
// finds the lock held.
func TestTryLockNote(t *testing.T) {
	d, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	l, err := d.TryLockNote("k", "outputs 1234")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock()
	_, err = d.TryLock("k")
	var le *LockedError
	if !errors.As(err, &le) || le.Holder.Note != "outputs 1234" {
		t.Fatalf("TryLock of a held key = %v (holder %+v), want the holder's note", err, le)
	}
}
