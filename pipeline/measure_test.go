package pipeline

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/rawbatch/rawbatch/cache"
	"github.com/rawbatch/rawbatch/pipeline/internal/libraw"
)

// TestMain lets the test binary act as a measuring child process: with
// RAWBATCH_MEASURE set to a JSON measureSpec it converts one file, prints a
// measureResult as JSON and exits. Memory tests and benchmarks use it to
// measure the peak RSS of one conversion in a fresh process.
func TestMain(m *testing.M) {
	if spec := os.Getenv("RAWBATCH_MEASURE"); spec != "" {
		os.Exit(measureChild(spec))
	}
	os.Exit(m.Run())
}

type measureSpec struct {
	In, Out  string
	Settings Settings
	Threads  int
	Estimate int64  // bytes, for the memory limit a worker sets
	CacheDir string // a stage cache to use, kept (Keep); "" for none
}

type measureResult struct {
	IdleRSS, PeakRSS int64 // bytes: VmRSS before the conversion, VmHWM after
	Err              string
	FromCache        bool // the decoded image came from the stage cache
}

// procStatus returns a field of /proc/self/status in bytes (VmRSS, VmHWM).
func procStatus(field string) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb * 1024
		}
	}
	return 0
}

func measureChild(spec string) int {
	var s measureSpec
	if err := json.Unmarshal([]byte(spec), &s); err != nil {
		fmt.Println(err)
		return 2
	}
	_ = libraw.Version() // libraries loaded before the idle reading
	var r measureResult
	r.IdleRSS = procStatus("VmRSS")
	LimitMemory(s.Estimate) // as a worker does
	outs := []OutputSpec{{Variant: s.Settings.OutputVariants()[0], Path: s.Out}}
	if vs := s.Settings.Variants; len(vs) > 1 {
		outs = outs[:0]
		for _, v := range vs {
			outs = append(outs, OutputSpec{Variant: v, Path: s.Out + v.Suffix()})
		}
	}
	opts := ConvertOptions{Threads: s.Threads}
	if s.CacheDir != "" {
		c, err := cache.Open(s.CacheDir, 0)
		if err != nil {
			fmt.Println(err)
			return 2
		}
		opts.Cache = &CacheOptions{Cache: c, Keep: true}
	}
	res, err := ConvertOutputs(context.Background(), s.In, outs, s.Settings, opts)
	if err != nil {
		r.Err = err.Error()
	}
	r.FromCache = res.FromCache
	r.PeakRSS = procStatus("VmHWM")
	json.NewEncoder(os.Stdout).Encode(r)
	return 0
}

// measurePeak converts in → out in a fresh child process and returns the
// growth of its peak RSS over its idle RSS, in bytes.
func measurePeak(t testing.TB, in, out string, s Settings, threads int, estimate int64) int64 {
	t.Helper()
	r := measure(t, measureSpec{In: in, Out: out, Settings: s, Threads: threads, Estimate: estimate})
	return r.PeakRSS - r.IdleRSS
}

// measure runs the conversion of ms in a fresh child process and returns
// what it measured.
func measure(t testing.TB, ms measureSpec) measureResult {
	t.Helper()
	spec, _ := json.Marshal(ms)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "RAWBATCH_MEASURE="+string(spec))
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("measuring child: %v\n%s", err, b)
	}
	var r measureResult
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("measuring child output %q: %v", b, err)
	}
	if r.Err != "" {
		t.Fatalf("measuring child: %s", r.Err)
	}
	return r
}
