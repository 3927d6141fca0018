package batch

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
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
// the Watcher only says when. A directory that goes (removed, renamed,
// unmounted) is watched again when Refresh finds it back.
type Watcher struct {
	changed chan struct{} // one pending change, coalesced
	skip    func(path string) bool
	fsw     *fsnotify.Watcher
	poll    time.Duration
	dirs    []string
	// watched is, by directory of dirs, the directory inotify watches
	// (nil: none, it was gone at the last look): another one under the
	// same path is a directory made again, whose tree is watched anew.
	watched map[string]os.FileInfo
	gone    map[string]bool // by directory of dirs, gone at the last Refresh
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
		watched: map[string]os.FileInfo{}, gone: map[string]bool{},
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
		fi, err := os.Stat(d)
		if err == nil {
			err = w.addTree(d)
		}
		if err != nil {
			fsw.Close()
			return nil, err
		}
		w.watched[d] = fi
	}
	w.wg.Add(1)
	go w.events()
	return w, nil
}

// Refresh looks at each of the directories again, as it is now: gone
// says why each that cannot be watched now cannot (it was removed or
// renamed, is no longer a directory), by directory; back lists those
// that are there again after a Refresh found them gone or, with inotify,
// that another directory now stands for under the same path (removed and
// made again, a card mounted again): their trees are watched anew, the
// old watches dropped. A directory whose watch cannot be added is gone,
// with that error. Not safe for concurrent use (one caller, between its
// runs).
func (w *Watcher) Refresh() (gone map[string]error, back []string) {
	gone = map[string]error{}
	live := map[string]bool{} // the paths inotify watches: a removed directory's watch is dropped
	if w.fsw != nil {
		for _, p := range w.fsw.WatchList() {
			live[p] = true
		}
	}
	for _, d := range w.dirs {
		fi, err := os.Stat(d)
		if err == nil && !fi.IsDir() {
			err = fmt.Errorf("%s: not a directory", d)
		}
		if err == nil && w.fsw != nil {
			// A directory made again may have the removed one's inode
			// number: its watch, gone with it, tells them apart.
			if old := w.watched[d]; old == nil || !os.SameFile(old, fi) || !live[filepath.Clean(d)] {
				w.unwatchTree(d)
				w.watched[d] = nil
				if err = w.addTree(d); err == nil {
					w.watched[d] = fi
					if old != nil {
						back = append(back, d) // replaced without a look finding it gone
					}
				}
			}
		}
		if err != nil {
			gone[d] = err
			w.gone[d] = true
			continue
		}
		if w.gone[d] {
			delete(w.gone, d)
			back = append(back, d)
		}
	}
	return gone, back
}

// unwatchTree drops the inotify watches of dir and everything under it
// (the directory that stood there before: moved away, its watches still
// report its changes under the old names).
func (w *Watcher) unwatchTree(dir string) {
	dir = filepath.Clean(dir)
	for _, p := range w.fsw.WatchList() {
		if p == dir || strings.HasPrefix(p, dir+string(filepath.Separator)) {
			w.fsw.Remove(p) // already gone with its directory: nothing to drop
		}
	}
}

// isDir reports whether path is one of the watched directories.
func (w *Watcher) isDir(path string) bool {
	for _, d := range w.dirs {
		if filepath.Clean(d) == path {
			return true
		}
	}
	return false
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
			if ev.Has(fsnotify.Create) || ev.Has(fsnotify.Write) || ev.Has(fsnotify.Rename) || ev.Has(fsnotify.Chmod) ||
				(ev.Has(fsnotify.Remove) && w.isDir(ev.Name)) { // a watched directory gone: Refresh says so
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
// with its size and modification time, and each directory that is gone
// (size -1: its going and its coming back are changes, even empty).
func (w *Watcher) scan() map[string]fileState {
	m := map[string]fileState{}
	for _, dir := range w.dirs {
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			m[dir] = fileState{size: -1}
			continue
		}
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
