package pipeline

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// BenchmarkSampleFiles converts each sample file of testdata/raw to a
// default JPEG in-process (ConvertFile, default settings) and prints, per
// file, the median CPU time (user + system of the process, ms), the
// median wall time and the stages above 5 ms (their median wall ms), over
// b.N rounds (`-benchtime 3x` for medians of three). With
// SAMPLEFILES_LOOK=camera the files are converted with --look camera.
// It shows the fixed costs of small files (preview fits, lens, denoise).
func BenchmarkSampleFiles(b *testing.B) {
	files := rawFiles(b)
	out := filepath.Join(b.TempDir(), "out.jpg")
	s := DefaultSettings()
	if os.Getenv("SAMPLEFILES_LOOK") == "camera" {
		s.Look = LookCamera
	}
	type times struct {
		cpu, wall []time.Duration
		stage     map[string][]time.Duration
	}
	per := make([]times, len(files))
	for i := range per {
		per[i].stage = map[string][]time.Duration{}
	}
	for b.Loop() {
		for i, f := range files {
			c0, t0 := cpuTime(), time.Now()
			res, err := ConvertFile(context.Background(), f, out, s)
			if err != nil {
				b.Fatalf("%s: %v", f, err)
			}
			per[i].wall = append(per[i].wall, time.Since(t0))
			per[i].cpu = append(per[i].cpu, cpuTime()-c0)
			for _, st := range res.Timings {
				per[i].stage[st.Stage] = append(per[i].stage[st.Stage], st.Duration)
			}
		}
	}
	median := func(d []time.Duration) time.Duration {
		d = append([]time.Duration(nil), d...)
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		return d[len(d)/2]
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	var totalCPU time.Duration
	var report strings.Builder
	fmt.Fprintf(&report, "\n|file|CPU ms|wall ms|stages > 5 ms (wall ms)|\n|---|---|---|---|\n")
	for i, f := range files {
		cpu, wall := median(per[i].cpu), median(per[i].wall)
		totalCPU += cpu
		var st []string
		for _, stage := range Stages {
			if d := per[i].stage[stage.Name]; len(d) > 0 && median(d) > 5*time.Millisecond {
				st = append(st, fmt.Sprintf("%s %.0f", stage.Name, ms(median(d))))
			}
		}
		fmt.Fprintf(&report, "|%s|%.0f|%.0f|%s|\n", filepath.Base(f), ms(cpu), ms(wall), strings.Join(st, ", "))
		b.ReportMetric(ms(cpu), filepath.Base(f)+"-cpu-ms")
	}
	fmt.Fprintf(&report, "|total|%.0f| | |\n", ms(totalCPU))
	b.Log(report.String())
	b.ReportMetric(ms(totalCPU), "cpu-ms-total")
}
