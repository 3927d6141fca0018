package batch

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
)

// Threads that grow: a conversion admitted on fewer threads
// than its fair share, because other files held the cores, is given more
// when those end (budget.Scheduler.Grow, Runner's offer). The worker
// learns it while it converts: after the file's request line on its
// stdin, and before the next request, the parent writes one text line per
// raise,
//
//	threads N
//
// N (decimal, above the count so far) being the conversion's new thread
// count. The worker's reader (workerSession.readFrames) raises GOMAXPROCS to N (which the Go stages'
// row loops read at each loop, par.Rows) and the count the pipeline reads
// at each band (pipeline.ConvertOptions.LiveThreads); LibRaw's OpenMP
// threads, fixed when its processing starts, stay at the request's
// Threads. A line that arrives once the file is done is dropped. Lines a
// worker does not know are ignored: a message an older worker may skip
// without misreading anything. A message that must not be ignored raises
// wireVersion.

// threadsLine is the wire text of a raise to n threads.
func threadsLine(n int) string { return fmt.Sprintf("threads %d\n", n) }

// parseThreadsLine returns the thread count of a "threads N" line, false
// for any other line (or N < 1).
func parseThreadsLine(line string) (int, bool) {
	f := strings.Fields(line)
	if len(f) != 2 || f[0] != "threads" {
		return 0, false
	}
	n, err := strconv.Atoi(f[1])
	if err != nil || n < 1 {
		return 0, false
	}
	return n, true
}

// workerThreads is a worker's live thread count: the request's Threads,
// raised by "threads N" lines.
type workerThreads struct {
	mu  sync.Mutex
	n   int
	max int // the largest count set while the conversion ran
}

// threadsToldHook, when set (tests), is called by a worker's reader after
// it has applied a "threads N" line.
var threadsToldHook func(n int)

// now returns the thread count now (pipeline.ConvertOptions.LiveThreads).
func (w *workerThreads) now() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n
}

// peak returns the largest thread count set.
func (w *workerThreads) peak() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.max
}

// raise makes n the thread count when it is above the current one.
func (w *workerThreads) raise(n int, setGo bool) {
	w.mu.Lock()
	if n > w.n {
		w.n, w.max = n, max(w.max, n)
		if setGo {
			runtime.GOMAXPROCS(n)
		}
	}
	w.mu.Unlock()
	if threadsToldHook != nil {
		threadsToldHook(n)
	}
}
