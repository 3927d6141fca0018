package pipeline

import "runtime/debug"

// LimitMemory sets the Go runtime's soft memory limit of a process that
// converts one file to its estimate (bytes) plus an eighth (at least
// gcSlack); 0 sets none. With
// the default GOGC the heap may grow to twice its live size before a
// collection, so several variants, each allocating and dropping full-size
// buffers, would take more than their estimate; the limit makes the
// collector keep to it. The big buffers hold no pointers, so the extra
// collections cost little (+2 % time measured on 20 variants).
func LimitMemory(estimate int64) {
	if estimate > 0 {
		debug.SetMemoryLimit(estimate + max(estimate/8, gcSlack))
	}
}

// gcSlack is the least a worker's Go memory limit adds to its file's
// estimate (otherwise an eighth of it), in bytes: room for the runtime's
// own memory, so collections run when the heap nears the estimate and not
// constantly.
const gcSlack = 4 << 20
