package batch

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/rawbatch/rawbatch/pipeline"
	"github.com/rawbatch/rawbatch/pipeline/synthdng"
)

// BenchmarkWorkerTiny converts 200 tiny (64×48) files of the realistic
// set (lossless DNGs and ARWs with a preview, a known lens and ISO 1600)
// one after the other in one worker session, in this process, as a pooled
// worker does (its memory limit, its GOMAXPROCS of one thread, a stage
// cache without Keep as convert's default), and
// reports the CPU milliseconds per file: a worker's fixed cost of a file
// without the process start (BenchmarkTiny1000 in cmd/rawbatch measures
// the whole run).
func BenchmarkWorkerTiny(b *testing.B) {
	const n, w, h = 200, 64, 48
	formats := make([]synthdng.RealSetFormat, n)
	for k := range formats {
		formats[k] = synthdng.RealDNG
		if k%2 == 1 {
			formats[k] = synthdng.RealARW
		}
	}
	s := pipeline.DefaultSettings()
	v := s.OutputVariants()[0]
	paths, err := synthdng.RealSet("..", w, h, formats, func(in, out string) error {
		_, err := pipeline.ConvertOutputs(context.Background(), in, []pipeline.OutputSpec{{Variant: v, Path: out}}, s, pipeline.ConvertOptions{})
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	out, cacheDir := b.TempDir(), b.TempDir()
	reqs := make([]workerRequest, len(paths))
	for k, p := range paths {
		fi, err := pipeline.ReadInfo(p)
		if err != nil {
			b.Fatal(err)
		}
		est := pipeline.EstimateMemory(fi, s, 1)
		reqs[k] = newWorkerRequest(Job{Input: []byte(p), Settings: s, Threads: 1, Cache: &CacheRequest{Dir: []byte(cacheDir), Max: 1 << 30}, Estimate: est.Total, Whole: est.Whole,
			Outputs: []JobOutput{{Variant: v, Path: []byte(filepath.Join(out, fmt.Sprintf("%d.jpg", k)))}}})
	}
	procs := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(procs)
	defer pipeline.CloseLensDB()
	var sink errSink
	sess := &workerSession{procs: procs, enc: json.NewEncoder(&sink), errw: io.Discard}
	var cpu time.Duration
	files := 0
	for b.Loop() {
		c0 := cpuTime()
		for _, req := range reqs {
			if code := sess.serve(req); code != 0 || sink.err != "" {
				b.Fatalf("%s: status %d %s", req.Input, code, sink.err)
			}
		}
		cpu += cpuTime() - c0
		files += len(reqs)
	}
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(files), "cpu-ms/file")
}

// errSink is a worker's reply stream that keeps the first failure.
type errSink struct{ err string }

func (e *errSink) Write(p []byte) (int, error) {
	var rep workerReply
	if err := json.Unmarshal(p, &rep); err != nil {
		e.err = err.Error()
	} else if rep.Err != nil && e.err == "" {
		e.err = string(rep.Err)
	}
	return len(p), nil
}

// cpuTime is this process's user and system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
