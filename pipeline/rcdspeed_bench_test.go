package pipeline

import (
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/rawbatch/rawbatch/pipeline/synthdng"
)

// BenchmarkDemosaicSmall times the demosaic stage alone (our scaling and
// RCD) on the small Bayer samples of testdata/raw with two threads, and
// prints the median of five runs of each with its cost per megapixel,
// which shows a fixed cost per file next to BenchmarkDemosaic24MP's.
// `go test -run '^$' -bench BenchmarkDemosaicSmall -benchtime 1x ./pipeline/`.
func BenchmarkDemosaicSmall(b *testing.B) {
	prev := runtime.GOMAXPROCS(2)
	defer runtime.GOMAXPROCS(prev)
	files := []string{"canon550d_colorchart.dng", "canond30_CRW.CRW"}
	for b.Loop() {
		walls, cpus := map[string][]time.Duration{}, map[string][]time.Duration{}
		for range 5 {
			for _, f := range files {
				w, c := timeDemosaic(b, filepath.Join("..", "testdata", "raw", f), DefaultSettings(), 2)
				walls[f], cpus[f] = append(walls[f], w), append(cpus[f], c)
			}
		}
		for _, f := range files {
			slicesSort(walls[f])
			slicesSort(cpus[f])
			fmt.Printf("demosaic stage, %s, 2 threads: wall %.0f ms, CPU %.0f ms (medians of 5)\n", f, walls[f][2].Seconds()*1e3, cpus[f][2].Seconds()*1e3)
		}
	}
}

// BenchmarkRawPath24MP prints, for each per-file step of the realistic
// 24 MP lossless DNG and Sony lossless ARW (realFiles) up to the demosaic stage (RCD, two threads), its wall
// time and CPU time (user + system, all threads; medians of three runs,
// each from a fresh LibRaw handle), and the system time and minor page
// faults of the first run, in a fresh process as a worker is (later runs
// reuse the Go heap the first one grew, without faulting): the white-level
// and demosaic rows show the raw path's passes over the data, the faults
// its fresh memory (LibRaw's raw buffer at unpack, the float image at
// demosaic). Run it in its own process:
// `go test -run '^$' -bench BenchmarkRawPath24MP -benchtime 1x ./pipeline/`.
func BenchmarkRawPath24MP(b *testing.B) {
	files := realFiles(b, synthdng.RealW, synthdng.RealH, synthdng.RealDNG, synthdng.RealARW)
	prev := runtime.GOMAXPROCS(2)
	defer runtime.GOMAXPROCS(prev)
	type sample struct{ wall, cpu, sys, faults []float64 }
	for b.Loop() {
		for _, in := range files {
			var names []string
			got := map[string]*sample{}
			for range 3 {
				stepUsage(b, in, 2, func(name string, wall, cpu, sys time.Duration, faults int64) {
					s := got[name]
					if s == nil {
						s = &sample{}
						got[name] = s
						names = append(names, name)
					}
					s.wall, s.cpu = append(s.wall, wall.Seconds()*1e3), append(s.cpu, cpu.Seconds()*1e3)
					s.sys, s.faults = append(s.sys, sys.Seconds()*1e3), append(s.faults, float64(faults))
				})
				runtime.GC()
			}
			for _, n := range names {
				s := got[n]
				fmt.Printf("24 MP raw path, %s, %-13s wall %6.1f ms, CPU %6.1f ms (medians of 3); first run: system %5.1f ms, %6.0f minor faults\n",
					filepath.Ext(in), n, median(s.wall), median(s.cpu), s.sys[0], s.faults[0])
			}
		}
	}
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	slices.Sort(s)
	return s[len(s)/2]
}

// stepUsage runs the per-file steps of the default settings for in up to
// and including the demosaic stage, with threads threads, and reports
// each step's wall, CPU and system time and minor page faults to f.
func stepUsage(t testing.TB, in string, threads int, f func(name string, wall, cpu, sys time.Duration, faults int64)) {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	hdr, err := ReadHeader(in)
	if err != nil {
		t.Fatal(err)
	}
	s := DefaultSettings()
	j := &job{in: in, settings: s, hdr: hdr, threads: threads}
	defer j.cleanup()
	usage := func() (cpu, sys time.Duration, faults int64) {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			t.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), time.Duration(ru.Stime.Nano()), ru.Minflt
	}
	for _, st := range PlanStages(InfoFromHeader(hdr), s).Steps {
		t0 := time.Now()
		c0, s0, f0 := usage()
		if err := st.stage.run(t.Context(), j); err != nil {
			t.Fatalf("%s: %s: %v", in, st.Name, err)
		}
		c1, s1, f1 := usage()
		f(st.Name, time.Since(t0), c1-c0, s1-s0, f1-f0)
		if st.Name == "demosaic" {
			return
		}
	}
	t.Fatalf("%s: no demosaic step", in)
}
