package demosaic

import (
	"runtime"
	"syscall"
	"testing"
	"time"
)

// BenchmarkRCDKernel demosaics a 12 MP CFA on one goroutine with the
// kernel of rcd.go (rcd), the kernel it replaced (previous,
// rcd_prev_test.go) and the first one (reference, rcd_ref_test.go): a
// noisy one (noisyCFA: noise, edges and clipping, as
// real files have, where branches would mispredict) and a smooth one (a
// zone plate). ns/op is the wall time of one 12 MP frame, cpu-ms/op the
// CPU time of the goroutine's thread (which the machine's other load
// does not inflate as it does the wall time).
// `go test -run '^$' -bench BenchmarkRCDKernel -benchtime 3x ./pipeline/demosaic/`.
func BenchmarkRCDKernel(b *testing.B) {
	const w, h = 4000, 3000
	inputs := []struct {
		name string
		c    CFA
	}{{"noisy", noisyCFA(w, h, phases["GRBG"], false, 1)}, {"smooth", mosaic(zonePlate(w, h), w, h, phases["RGGB"])}}
	dst := make([]float32, w*h*3)
	for i := range dst { // fault its pages in now, not in the first kernel's time
		dst[i] = 1
	}
	for _, in := range inputs {
		c := in.c
		c.Threads = 1
		for _, k := range []struct {
			name string
			f    func(CFA, []float32) error
		}{{"rcd", RCD}, {"previous", prevRCD}, {"reference", refRCD}} {
			b.Run(in.name+"/"+k.name, func(b *testing.B) {
				runtime.LockOSThread() // Threads 1: RCD runs on this goroutine
				defer runtime.UnlockOSThread()
				c0 := threadCPU(b)
				for b.Loop() {
					if err := k.f(c, dst); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(threadCPU(b)-c0)/1e6/float64(b.N), "cpu-ms/op")
			})
		}
	}
}

// threadCPU is the CPU time (user and system) of the calling OS thread.
func threadCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_THREAD, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
