package highlight

import (
	"slices"
	"syscall"
	"testing"
	"time"
)

// cpuTime is the process's CPU time (user and system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkReconstruct24MP reconstructs a 6000×4000 image of coloured
// noise with 3000 small glints scattered over it (about 40 % of the
// pixels within the radius of one, as in the realistic set's files),
// with Reconstructor (new) and with refReconstructor (ref), on one
// goroutine. cpu-ms/op is the process's CPU time a run (steadier than
// ns/op on a loaded machine).
func BenchmarkReconstruct24MP(b *testing.B) {
	const w, h = 6000, 4000
	src := glints(w, h, 3000, 9)
	pix := slices.Clone(src)
	for _, bc := range []struct {
		name string
		fn   func([]float32, int, int, float32) []float32
	}{{"new", Reconstruct}, {"ref", refReconstruct}} {
		b.Run(bc.name, func(b *testing.B) {
			var cpu time.Duration
			for b.Loop() {
				copy(pix, src)
				c0 := cpuTime()
				bc.fn(pix, w, h, DefaultThreshold)
				cpu += cpuTime() - c0
			}
			b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
		})
	}
}
