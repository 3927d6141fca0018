// Package fault is the seam of rawbatch's fault hooks: the places where a
// test can make a conversion crash or hang call At, which does nothing
// unless Hook is set, and the place where a test can make it fail with an
// error (package pipeline's output writing, at Renaming) calls Fail, which
// returns nil unless FailHook is set. Only package internal/faulttest sets
// them, and only test binaries import that package, so a release build of
// rawbatch has no fault hook at all (cmd/rawbatch TestReleaseHasNoFaultHook
// checks its imports).
package fault

// Points where At (and, at Renaming, Fail) is called.
const (
	// Decode: a worker is about to convert an input (before LibRaw opens it).
	Decode = "decode"
	// Decoded: the input is decoded (demosaiced), before any output is
	// written.
	Decoded = "decoded"
	// Renaming: every temporary output of an input is written (and closed),
	// and is about to be renamed into place.
	Renaming = "renaming"
	// Converted: a worker has converted an input (its outputs are in
	// place) and is about to reply.
	Converted = "converted"
	// Header: LibRaw is about to open a file for its header
	// (header.LibRawIdentify), in a header helper process or in process.
	Header = "header"
	// Planned: the planner has added an input to the plan (its walk, or
	// the listed files).
	Planned = "planned"
)

// Hook is called by At; nil (the default) means no fault.
var Hook func(point, input string)

// At runs Hook, if any, for point and input (the input's path).
func At(point, input string) {
	if Hook != nil {
		Hook(point, input)
	}
}

// FailHook is called by Fail; nil (the default) means no fault.
var FailHook func(point, input string) error

// Fail returns FailHook's error, if any, for point and input (the input's
// path): the conversion of input fails with it there, as with a real I/O
// error. Nil when no hook is set or the hook has no fault for input.
func Fail(point, input string) error {
	if FailHook != nil {
		return FailHook(point, input)
	}
	return nil
}

// The native faults and probe, set by package pipeline/internal/libraw when
// it is linked (its init), so that package faulttest and tests outside
// pipeline/ reach C code without importing a cgo binding: Crash dies of
// SIGSEGV in C code (a null-pointer write, as a decoder bug would), Hang
// blocks the calling OS thread in C for ever (as LibRaw's open does on some
// damaged files), and OpenMPThreads is omp_get_max_threads on the calling
// OS thread (the thread cap a LibRaw call from it would use). Nil where
// LibRaw is not linked.
var (
	Crash         func()
	Hang          func()
	OpenMPThreads func() int
)
