package batch

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Watcher tells when files appear or change under its directories (the
// hot folders of `rawbatch watch`): through inotify (fsnotify), with a
// watch on every directory, new ones included, or by polling at an
// interval (network mounts, where inotify sees nothing of other hosts'
// writes). Idle, an inotify Watcher runs nothing: it blocks in the
// kernel until an event comes. What to convert is then found by an
// ordinary planned run over the directories (records make it cheap);
// the Watcher only says when.
type Watcher struct {
	changed chan struct{} // one pending change, coalesced
	skip    func(path string) bool
	fsw     *fsnotify.Watcher
	poll    time.Duration
	dirs    []string
	done    chan struct{}
	wg      sync.WaitGroup
	// Errs receives the watcher's errors (a directory that could not be
	// watched, an inotify queue overflow: a change is assumed then).
	Errs chan error
}

// NewWatcher watches dirs and everything under them but what skip says
// (OUTDIR inside a watched directory, rawbatch's own folders): by
// inotify, or by a walk every poll when poll > 0. Close ends it.
// Errors: inotify cannot be set up, or a directory cannot be watched.
func NewWatcher(dirs []string, poll time.Duration, skip func(path string) bool) (*Watcher, error) {
	w := &Watcher{changed: make(chan struct{}, 1), skip: skip, poll: poll, dirs: dirs,
		done: make(chan struct{}), Errs: make(chan error, 16)}
	if poll > 0 {
		prev := w.scan()
		w.wg.Add(1)
		go w.polling(prev)
		return w, nil
	}
	fsw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	w.fsw = fsw
	for _, d := range dirs {
		if err := w.addTree(d); err != nil {
			fsw.Close()
			return nil, err
		}
	}
	w.wg.Add(1)
	go w.events()
	return w, nil
}

// Changed returns the channel that receives a value when something
// changed since it was last read (many changes give one value).
func (w *Watcher) Changed() <-chan struct{} { return w.changed }

// Settle waits, after a change, until nothing has changed for quiet (a
// card copied in comes as one burst, converted as one batch), or until
// ctx ends; false when ctx ended.
func (w *Watcher) Settle(ctx context.Context, quiet time.Duration) bool {
	t := time.NewTimer(quiet)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-w.changed:
			if !t.Stop() {
				<-t.C
			}
			t.Reset(quiet)
		case <-t.C:
			return true
		}
	}
}

// Close stops watching.
func (w *Watcher) Close() {
	close(w.done)
	if w.fsw != nil {
		w.fsw.Close()
	}
	w.wg.Wait()
}

func (w *Watcher) signal() {
	select {
	case w.changed <- struct{}{}:
	default:
	}
}

func (w *Watcher) report(err error) {
	select {
	case w.Errs <- err:
	default:
	}
}

// addTree watches dir and every directory under it (symbolic links not
// followed, skip's left out).
func (w *Watcher) addTree(dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == dir {
				return err
			}
			w.report(err)
			return nil
		}
		if !d.IsDir() {
			return nil
		}
		if p != dir && w.skip != nil && w.skip(p) {
			return filepath.SkipDir
		}
		if err := w.fsw.Add(p); err != nil {
			if p == dir {
				return err
			}
			w.report(err)
		}
		return nil
	})
}

// events turns inotify's events into changes; a new directory is
// watched with what is under it already (a folder moved or copied in).
func (w *Watcher) events() {
	defer w.wg.Done()
	for {
		select {
		case <-w.done:
			return
		case ev, ok := <-w.fsw.Events:
			if !ok {
				return
			}
			if w.skip != nil && w.skip(ev.Name) {
				continue
			}
			if ev.Has(fsnotify.Create) {
				if fi, err := os.Lstat(ev.Name); err == nil && fi.IsDir() {
					w.addTree(ev.Name)
				}
			}
			if ev.Has(fsnotify.Create) || ev.Has(fsnotify.Write) || ev.Has(fsnotify.Rename) || ev.Has(fsnotify.Chmod) {
				w.signal()
			}
		case err, ok := <-w.fsw.Errors:
			if !ok {
				return
			}
			w.report(err)
			w.signal() // an overflowed queue lost events: look again
		}
	}
}

// fileState is what polling compares of a file.
type fileState struct {
	size  int64
	mtime time.Time
}

// scan is one polling walk: every regular file under the directories
// with its size and modification time.
func (w *Watcher) scan() map[string]fileState {
	m := map[string]fileState{}
	for _, dir := range w.dirs {
		filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if p != dir && w.skip != nil && w.skip(p) {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			if d.Type().IsRegular() {
				if fi, err := d.Info(); err == nil {
					m[p] = fileState{fi.Size(), fi.ModTime()}
				}
			}
			return nil
		})
	}
	return m
}

// polling walks the directories every w.poll and signals a change when a
// file appeared, went, or changed size or modification time.
func (w *Watcher) polling(prev map[string]fileState) {
	defer w.wg.Done()
	t := time.NewTicker(w.poll)
	defer t.Stop()
	for {
		select {
		case <-w.done:
			return
		case <-t.C:
		}
		cur := w.scan()
		if !sameFiles(prev, cur) {
			w.signal()
		}
		prev = cur
	}
}

func sameFiles(a, b map[string]fileState) bool {
	if len(a) != len(b) {
		return false
	}
	for p, s := range a {
		if t, ok := b[p]; !ok || t.size != s.size || !t.mtime.Equal(s.mtime) {
			return false
		}
	}
	return true
}
