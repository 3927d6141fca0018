package pipeline

import (
	"os"

	"golang.org/x/sys/unix"
)

// writebackChunk is how many bytes writebackWriter lets accumulate before it
// asks the kernel to start writing them out.
const writebackChunk = 8 << 20

// writebackWriter writes to f and, after every writebackChunk bytes, starts
// the kernel's writeback of them (sync_file_range(2) with
// SYNC_FILE_RANGE_WRITE: asynchronous, it does not wait for the disk). The
// fsync before the output is renamed into place then waits only for the
// tail instead of the whole file: for a 144 MB TIFF the disk works while the
// rest of the file is computed. It changes nothing about durability, which
// still rests on that fsync; where sync_file_range is not supported (some
// filesystems), it is silently skipped.
type writebackWriter struct {
	f         *os.File
	off, done int64 // bytes written, and bytes whose writeback was started
	skip      bool  // sync_file_range failed once: stop trying
}

func (w *writebackWriter) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	w.off += int64(n)
	if !w.skip && w.off-w.done >= writebackChunk {
		if unix.SyncFileRange(int(w.f.Fd()), w.done, w.off-w.done, unix.SYNC_FILE_RANGE_WRITE) != nil {
			w.skip = true
		}
		w.done = w.off
	}
	return n, err
}
