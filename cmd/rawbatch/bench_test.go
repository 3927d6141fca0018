package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rawbatch/rawbatch/pipeline"
	"github.com/rawbatch/rawbatch/pipeline/synthdng"
)

// rawbatchBinary returns a path that runs this test binary as rawbatch
// (TestMain dispatches on the program name). It is a hard link, not a
// symbolic one: the workers are started through os.Executable, which
// resolves symbolic links to the test binary's own name.
func rawbatchBinary(b testing.TB) string {
	p := filepath.Join(b.TempDir(), "rawbatch")
	if err := os.Link(os.Args[0], p); err != nil {
		data, rerr := os.ReadFile(os.Args[0])
		if rerr != nil || os.WriteFile(p, data, 0o755) != nil {
			b.Fatal(err)
		}
	}
	return p
}

// realFiles puts n files of the realistic w×h set (synthdng.RealSet: a
// real picture with texture, ISO 1600 noise, a lensfun-known lens and an
// embedded preview; lossless JPEG DNGs and Sony lossless ARWs alternately)
// into dir, hard-linked (or copied) from the cache build/realset-vN, where
// they are written when missing. Benchmarks of speed and memory convert
// these; the flat charts of writeSynth are for plumbing.
func realFiles(b testing.TB, dir string, n, w, h int) {
	b.Helper()
	formats := make([]synthdng.RealSetFormat, n)
	for k := range formats {
		formats[k] = synthdng.RealDNG
		if k%2 == 1 {
			formats[k] = synthdng.RealARW
		}
	}
	paths, err := synthdng.RealSet("../..", w, h, formats, func(in, out string) error {
		s := pipeline.DefaultSettings()
		_, err := pipeline.ConvertOutputs(context.Background(), in, []pipeline.OutputSpec{{Variant: s.OutputVariants()[0], Path: out}}, s, pipeline.ConvertOptions{})
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	for _, p := range paths {
		if err := linkOrCopy(p, filepath.Join(dir, filepath.Base(p))); err != nil {
			b.Fatal(err)
		}
	}
}

// linkOrCopy hard-links src to dst, or copies it where it cannot.
func linkOrCopy(src, dst string) error {
	if os.Link(src, dst) == nil {
		return nil
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copying %s to %s: %w", src, dst, err)
	}
	return out.Close()
}

// writeSynth writes n synthetic w×h DNGs into dir.
func writeSynth(b testing.TB, dir string, n, w, h int) {
	c := synthdng.Chart{W: w, H: h, Background: [3]float64{0.18, 0.18, 0.18},
		Patches: []synthdng.Patch{{X0: w / 4, Y0: h / 4, X1: w / 2, Y1: h / 2, SRGBLinear: [3]float64{0.5, 0.2, 0.1}}}}
	cw, ch, scene := synthdng.ChartScene(c, 1, synthdng.DefaultColorMatrix, 1)
	for i := range n {
		p := filepath.Join(dir, fmt.Sprintf("synthetic-%02d.dng", i))
		if err := synthdng.WriteFile(p, synthdng.Spec{Width: cw, Height: ch, BlackLevel: 512, WhiteLevel: 16383, Scene: scene}); err != nil {
			b.Fatal(err)
		}
	}
}

// benchCmd is the command rawbatch ARGS for a benchmark, its stderr kept.
func benchCmd(bin string, args []string) (*exec.Cmd, *bytes.Buffer) {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "RAWBATCH_MIN_AGE=0s") // the inputs were just written
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	return cmd, &stderr
}

// runMeasured runs rawbatch with args and returns its wall time, the peak
// of the summed RSS of the process and all its worker processes (sampled
// every 10 ms from /proc) and its stderr.
func runMeasured(b *testing.B, bin string, args ...string) (time.Duration, int64, string) {
	cmd, stderr := benchCmd(bin, args)
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var peak int64
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			if err != nil {
				b.Fatalf("rawbatch %v: %v\n%s", args, err, stderr.String())
			}
			// The parent's own peak may have fallen between samples.
			ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
			return time.Since(t0), max(peak, ru.Maxrss*1024), stderr.String()
		case <-tick.C:
			peak = max(peak, treeRSS(cmd.Process.Pid))
		}
	}
}

// runTimed runs rawbatch with args and returns its wall time and the CPU
// time (user + system) of it and its worker processes, which it waits for.
func runTimed(b *testing.B, bin string, args ...string) (wall, cpu time.Duration) {
	cmd, stderr := benchCmd(bin, args)
	t0 := time.Now()
	if err := cmd.Run(); err != nil {
		b.Fatalf("rawbatch %v: %v\n%s", args, err, stderr.String())
	}
	return time.Since(t0), cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}

// treeRSS sums VmRSS of pid and its descendants, in bytes.
func treeRSS(pid int) int64 {
	var sum int64
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				var kb int64
				fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), &kb)
				sum += kb * 1024
			}
		}
	}
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, t := range tasks {
		kids, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pid, t.Name()))
		for _, f := range strings.Fields(string(kids)) {
			var c int
			fmt.Sscan(f, &c)
			sum += treeRSS(c)
		}
	}
	return sum
}

var atOnceRE = regexp.MustCompile(`at most (\d+) at once`)

// BenchmarkBudget45MP converts eight realistic 45 MP files (realFiles) with --jobs 8
// under a 2 GiB and an 8 GiB memory budget and prints wall time, peak RSS
// and peak concurrency. The 2 GiB run must stay under 2 GiB + 150 MB.
func BenchmarkBudget45MP(b *testing.B) {
	bin := rawbatchBinary(b)
	in := b.TempDir()
	realFiles(b, in, 8, 8256, 5504)
	fmt.Printf("%-10s %10s %12s %8s\n", "budget", "wall", "peak RSS", "at once")
	for b.Loop() {
		for _, bud := range []string{"2GiB", "8GiB"} {
			out := b.TempDir()
			el, rss, stderr := runMeasured(b, bin, "convert", "-q", "--jobs", "8", "--mem-budget", bud, in, "-o", out)
			n := "?"
			if m := atOnceRE.FindStringSubmatch(stderr); m != nil {
				n = m[1]
			}
			fmt.Printf("%-10s %9.1fs %10.0f MB %8s\n", bud, el.Seconds(), float64(rss)/1e6, n)
			if bud == "2GiB" && rss > 2<<30+150e6 {
				b.Errorf("peak RSS %d bytes exceeds 2 GiB + 150 MB", rss)
			}
		}
	}
}

// BenchmarkRerun1000 converts 1000 small synthetic DNGs, then times a
// re-run with nothing to do: it must take under 1 s (stats and up-to-date
// records only; no header reads, no decodes).
func BenchmarkRerun1000(b *testing.B) {
	bin := rawbatchBinary(b)
	in := b.TempDir()
	for i := range 10 {
		writeSynthN(b, filepath.Join(in, fmt.Sprintf("d%d", i)), 100, 32, 32)
	}
	out := b.TempDir()
	first, _, stderr := runMeasured(b, bin, "convert", "-q", in, "-o", out)
	if !strings.Contains(stderr, "1000 converted") {
		b.Fatalf("first run: %s", lastLines(stderr))
	}
	for b.Loop() {
		el, _, stderr := runMeasured(b, bin, "convert", "-q", in, "-o", out)
		if !strings.Contains(stderr, "0 converted, 1000 skipped") {
			b.Fatalf("re-run: %s", lastLines(stderr))
		}
		fmt.Printf("1000 files: first run %.1fs, unchanged re-run %.3fs\n", first.Seconds(), el.Seconds())
		if el > time.Second {
			b.Errorf("unchanged re-run of 1000 files took %v (want < 1 s)", el)
		}
	}
}

// writeSynthN writes n synthetic w×h DNGs into dir.
func writeSynthN(b *testing.B, dir string, n, w, h int) {
	os.MkdirAll(dir, 0o755)
	writeSynth(b, dir, n, w, h)
}

func lastLines(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-5):], "\n")
}

// BenchmarkVariants24MP, on two realistic 24 MP files (realFiles: a
// lossless DNG and a Sony lossless ARW), issue 25's targets, in three
// interleaved rounds (medians; single runs on a shared machine vary by
// ±15 %):
//   - four variants from one decode (full JPEG q90, 2048 px JPEG, 512 px
//     WebP, full TIFF16) against one full-size JPEG q90: at most 1.3× in
//     wall time (the CPU time of the process tree is printed too);
//   - adding a variant to a folder converted (the four) with --keep-cache,
//     against adding it to one converted without: a full-size JPEG q97
//     4:4:4 and a 2048 px JPEG, each at least 3× faster from the cache.
//
// It fails when a target is missed.
func BenchmarkVariants24MP(b *testing.B) {
	bin := rawbatchBinary(b)
	in := b.TempDir()
	realFiles(b, in, 2, synthdng.RealW, synthdng.RealH)
	four := []string{"--variant", "main=jpeg", "--variant", "web=jpeg,size=2048", "--variant", "thumb=webp,size=512", "--variant", "print=tiff16"}
	full97 := append(slices.Clone(four), "--variant", "hq=jpeg,quality=97,subsampling=444")
	both := append(slices.Clone(full97), "--variant", "small=jpeg,size=2048,quality=80")
	median := func(d []time.Duration) time.Duration {
		d = slices.Clone(d)
		slices.Sort(d)
		return d[len(d)/2]
	}
	run := func(args ...string) (time.Duration, time.Duration) {
		return runTimed(b, bin, append([]string{"convert", "-q"}, args...)...)
	}
	for b.Loop() {
		var ones, fours, oneCPU, fourCPU, coldHQ, warmHQ, cold2K, warm2K []time.Duration
		for range 3 {
			// Each in a fresh cache folder: a kept entry of these files in
			// the user's own would be a hit.
			w, c := run("--cache-dir", shmDir(b), in, "-o", b.TempDir())
			ones, oneCPU = append(ones, w), append(oneCPU, c)
			w, c = run(append(slices.Clone(four), "--cache-dir", shmDir(b), in, "-o", b.TempDir())...)
			fours, fourCPU = append(fours, w), append(fourCPU, c)
			// Without the cache (a fresh, empty one), then with it kept.
			coldOut, coldCache := b.TempDir(), shmDir(b)
			run(append(slices.Clone(four), "--cache-dir", coldCache, in, "-o", coldOut)...)
			w, _ = run(append(slices.Clone(full97), "--cache-dir", coldCache, in, "-o", coldOut)...)
			coldHQ = append(coldHQ, w)
			w, _ = run(append(slices.Clone(both), "--cache-dir", coldCache, in, "-o", coldOut)...)
			cold2K = append(cold2K, w)
			warmOut, warmCache := b.TempDir(), shmDir(b)
			run(append(slices.Clone(four), "--keep-cache", "--cache-dir", warmCache, in, "-o", warmOut)...)
			w, _ = run(append(slices.Clone(full97), "--keep-cache", "--cache-dir", warmCache, in, "-o", warmOut)...)
			warmHQ = append(warmHQ, w)
			w, _ = run(append(slices.Clone(both), "--keep-cache", "--cache-dir", warmCache, in, "-o", warmOut)...)
			warm2K = append(warm2K, w)
		}
		one, multi := median(ones), median(fours)
		fmt.Printf("%-52s %8s %8s\n", "2 × 24 MP (medians of 3 interleaved rounds)", "wall", "CPU")
		fmt.Printf("%-52s %7.2fs %7.2fs  (wall runs %v)\n", "one full-size JPEG q90", one.Seconds(), median(oneCPU).Seconds(), roundAll(ones))
		fmt.Printf("%-52s %7.2fs %7.2fs  (%.2f× wall, %.2f× CPU; target ≤ 1.3× wall; runs %v)\n", "full JPEG + 2048 px JPEG + 512 px WebP + full TIFF16",
			multi.Seconds(), median(fourCPU).Seconds(), multi.Seconds()/one.Seconds(), median(fourCPU).Seconds()/median(oneCPU).Seconds(), roundAll(fours))
		for _, a := range []struct {
			name       string
			cold, warm []time.Duration
		}{{"full-size JPEG q97 4:4:4 added", coldHQ, warmHQ}, {"2048 px JPEG added", cold2K, warm2K}} {
			c, w := median(a.cold), median(a.warm)
			fmt.Printf("%-52s %7.2fs without the cache, %.2fs from the kept cache: %.1f× faster (target ≥ 3×; runs %v, %v)\n", a.name, c.Seconds(), w.Seconds(), c.Seconds()/w.Seconds(), roundAll(a.cold), roundAll(a.warm))
			if c.Seconds() < 3*w.Seconds() {
				b.Errorf("%s: from the cache only %.1f× faster than without (want ≥ 3×)", a.name, c.Seconds()/w.Seconds())
			}
		}
		if multi.Seconds() > 1.3*one.Seconds() {
			b.Errorf("four variants cost %.2f× one JPEG (want ≤ 1.3×)", multi.Seconds()/one.Seconds())
		}
	}
}

// shmDir returns a new directory on /dev/shm (tmpfs, where the stage cache
// lives by default), removed when the benchmark ends; a temporary directory
// where /dev/shm does not exist.
func shmDir(b *testing.B) string {
	d, err := os.MkdirTemp("/dev/shm", "rawbatch-bench-")
	if err != nil {
		return b.TempDir()
	}
	b.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// roundAll rounds durations to 0.1 s for printing.
func roundAll(d []time.Duration) []time.Duration {
	r := make([]time.Duration, len(d))
	for i, x := range d {
		r[i] = x.Round(100 * time.Millisecond)
	}
	return r
}

// BenchmarkThreads45MP: four realistic 45 MP files (realFiles) under --mem-budget
// 1536MiB, which admits one at a time, with the default --jobs (the CPUs)
// against --jobs 1, interleaved over three rounds. Each file gets every
// core as it starts alone (threads decided at admission), so the default
// must be no slower than --jobs 1: it fails above 1.10× (the machine is
// shared; the medians of single runs vary by a few per cent). It prints the
// medians of wall and CPU time, the ratio and the most files run at once.
// RAWBATCH_BENCH_BEFORE=BIN adds a third run, interleaved with the others:
// the rawbatch binary BIN (say, built from the commit before a change) with
// the default --jobs; RAWBATCH_BENCH_ROUNDS=N runs N rounds instead of
// three.
func BenchmarkThreads45MP(b *testing.B) {
	bin := rawbatchBinary(b)
	in := b.TempDir()
	realFiles(b, in, 4, 8256, 5504)
	median := func(d []time.Duration) time.Duration {
		d = slices.Clone(d)
		slices.Sort(d)
		return d[len(d)/2]
	}
	type config struct {
		name, bin string
		args      []string
	}
	runs := []config{{"default --jobs", bin, nil}, {"--jobs 1", bin, []string{"--jobs", "1"}}}
	if before := os.Getenv("RAWBATCH_BENCH_BEFORE"); before != "" {
		runs = append(runs, config{"default --jobs, $RAWBATCH_BENCH_BEFORE", before, nil})
	}
	for b.Loop() {
		walls, cpus := make([][]time.Duration, len(runs)), make([][]time.Duration, len(runs))
		atOnce := make([]string, len(runs))
		rounds := 3
		if n, err := strconv.Atoi(os.Getenv("RAWBATCH_BENCH_ROUNDS")); err == nil && n > 0 {
			rounds = n
		}
		for range rounds {
			for i, r := range runs {
				args := append(append([]string{"convert", "-q", "--mem-budget", "1536MiB"}, r.args...), in, "-o", b.TempDir())
				cmd, stderr := benchCmd(r.bin, args)
				t0 := time.Now()
				if err := cmd.Run(); err != nil {
					b.Fatalf("rawbatch %v: %v\n%s", args, err, stderr.String())
				}
				walls[i] = append(walls[i], time.Since(t0))
				cpus[i] = append(cpus[i], cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime())
				if m := atOnceRE.FindStringSubmatch(stderr.String()); m != nil {
					atOnce[i] = m[1]
				}
			}
		}
		fmt.Printf("%-44s %8s %8s %8s  %s\n", "4 × 45 MP, --mem-budget 1536MiB", "wall", "CPU", "at once", "wall runs")
		for i, r := range runs {
			fmt.Printf("%-44s %7.1fs %7.1fs %8s  %v\n", r.name, median(walls[i]).Seconds(), median(cpus[i]).Seconds(), atOnce[i], roundAll(walls[i]))
		}
		ratio := median(walls[0]).Seconds() / median(walls[1]).Seconds()
		fmt.Printf("default / --jobs 1: %.2f× wall\n", ratio)
		if len(runs) > 2 {
			fmt.Printf("default / before: %.2f× wall\n", median(walls[0]).Seconds()/median(walls[2]).Seconds())
		}
		if ratio > 1.10 {
			b.Errorf("the default --jobs took %.2f× the wall time of --jobs 1 (want ≤ 1.10×)", ratio)
		}
	}
}

// BenchmarkTiny1000 converts 1000 tiny (64×48) files of the realistic set
// (lossless DNGs and ARWs with a preview, a known lens and ISO 1600, so
// every per-file step runs) in one `rawbatch convert` with default
// settings and prints files per second, wall and CPU time: the fixed cost
// of a file (process start of a worker, LibRaw's open, lensfun's
// database, the preview). It fails when a file was not converted.
func BenchmarkTiny1000(b *testing.B) {
	bin := rawbatchBinary(b)
	in := b.TempDir()
	realFiles(b, in, 1000, 64, 48)
	for b.Loop() {
		cmd, stderr := benchCmd(bin, []string{"convert", "-q", in, "-o", b.TempDir()})
		t0 := time.Now()
		if err := cmd.Run(); err != nil {
			b.Fatalf("rawbatch convert: %v\n%s", err, lastLines(stderr.String()))
		}
		wall := time.Since(t0)
		if !strings.Contains(stderr.String(), "1000 converted") {
			b.Fatalf("not every file converted: %s", lastLines(stderr.String()))
		}
		cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		fmt.Printf("1000 tiny 64×48 files: %.1f files/s (wall %.1fs, CPU %.1fs, %.1f ms CPU a file)\n",
			1000/wall.Seconds(), wall.Seconds(), cpu.Seconds(), cpu.Seconds())
		b.ReportMetric(1000/wall.Seconds(), "files/s")
	}
}

// BenchmarkPreviewThumbs60: 60 copies of testdata's Canon D30 CRW (a real
// file whose embedded preview is a 1440×960 JPEG) to one 512 px JPEG each,
// made from the preview (source=preview): the whole command's files a
// second (issue 25's target: 40), wall and CPU time of the process tree.
func BenchmarkPreviewThumbs60(b *testing.B) {
	bin := rawbatchBinary(b)
	in := b.TempDir()
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "raw", "canond30_CRW.CRW"))
	if err != nil {
		b.Fatal(err)
	}
	for k := range 60 {
		if err := os.WriteFile(filepath.Join(in, fmt.Sprintf("d30-%02d.crw", k)), data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		cmd, stderr := benchCmd(bin, []string{"convert", "-q", in, "-o", b.TempDir(), "--variant", "t=jpeg,size=512,source=preview"})
		t0 := time.Now()
		if err := cmd.Run(); err != nil {
			b.Fatalf("rawbatch convert: %v\n%s", err, lastLines(stderr.String()))
		}
		wall := time.Since(t0)
		if !strings.Contains(stderr.String(), "60 converted") {
			b.Fatalf("not every file converted: %s", lastLines(stderr.String()))
		}
		cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		fmt.Printf("60 preview thumbnails (512 px JPEG, source=preview): %.1f files/s (wall %.2fs, CPU %.2fs, %.1f ms CPU a file)\n",
			60/wall.Seconds(), wall.Seconds(), cpu.Seconds(), 1000*cpu.Seconds()/60)
		b.ReportMetric(60/wall.Seconds(), "files/s")
	}
}
