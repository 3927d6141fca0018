package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// BenchmarkQueue60 compares the multi-host mode on one machine with
// convert: the same 60 tiny synthetic DNGs (48×32) converted by `rawbatch
// convert --jobs 2` and by a broker (`rawbatch broker`, its embedded
// JetStream server) with two `rawbatch work --jobs 1` and `submit --wait`,
// in interleaved rounds, each into a fresh OUTDIR (and from a fresh input
// folder of hard links: a new path is a new job); then one 24 MP file
// through each, so that the per-file overhead on a real-sized file shows.
// The workers run with the end-to-end tests' short timings (beat 0.5 s)
// and are started once, idle between rounds (an idle worker looks for
// jobs every 0.25–1 s). It reports the median wall seconds of each and
// their ratio; no timing is asserted.
func BenchmarkQueue60(b *testing.B) {
	const rounds = 3
	c := newCluster(b)
	for i := range 60 {
		c.synthInput(fmt.Sprintf("f%03d.dng", i), i)
	}
	big := filepath.Join(c.dir, "big")
	if err := os.MkdirAll(big, 0o755); err != nil {
		b.Fatal(err)
	}
	in := c.in
	c.in = big
	c.synthInputWH("big.dng", 6000, 4000)
	c.in = in
	c.startBroker()
	c.startWorker(false, nil)
	c.startWorker(false, nil)
	c.waitWorkers(2)

	n := 0
	// fresh returns a new input folder of hard links to src's files.
	fresh := func(src string) string {
		n++
		dst := filepath.Join(c.dir, fmt.Sprintf("in-%02d", n))
		if err := os.MkdirAll(dst, 0o755); err != nil {
			b.Fatal(err)
		}
		ents, err := os.ReadDir(src)
		if err != nil {
			b.Fatal(err)
		}
		for _, e := range ents {
			if err := os.Link(filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())); err != nil {
				b.Fatal(err)
			}
		}
		return dst
	}
	timed := func(want string, args ...string) float64 {
		t0 := time.Now()
		code, stdout, stderr := c.run(nil, args...)
		d := time.Since(t0).Seconds()
		if code != 0 {
			b.Fatalf("rawbatch %s exited %d\n%s\n%s", strings.Join(args, " "), code, stdout, stderr)
		}
		if !strings.Contains(stdout+stderr, want) {
			b.Fatalf("rawbatch %s did not say %q:\n%s\n%s", strings.Join(args, " "), want, stdout, stderr)
		}
		return d
	}
	median := func(v []float64) float64 {
		v = slices.Clone(v)
		slices.Sort(v)
		return v[len(v)/2]
	}
	for b.Loop() {
		var conv, queued, conv24, queued24 []float64
		for range rounds {
			conv = append(conv, timed("60 converted", "convert", "-q", "--jobs", "2", fresh(in), "-o", filepath.Join(c.dir, fmt.Sprintf("out-%02d", n))))
			queued = append(queued, timed("queued 60,", "submit", fresh(in), "-o", filepath.Join(c.dir, fmt.Sprintf("out-%02d", n)), "--wait"))
		}
		for range rounds {
			conv24 = append(conv24, timed("1 converted", "convert", "-q", "--jobs", "2", fresh(big), "-o", filepath.Join(c.dir, fmt.Sprintf("out-%02d", n))))
			queued24 = append(queued24, timed("queued 1,", "submit", fresh(big), "-o", filepath.Join(c.dir, fmt.Sprintf("out-%02d", n)), "--wait"))
		}
		mc, mq, mc24, mq24 := median(conv), median(queued), median(conv24), median(queued24)
		b.ReportMetric(mc, "convert-s")
		b.ReportMetric(mq, "queue-s")
		b.ReportMetric(mq/mc, "queue/convert")
		b.ReportMetric(mc24, "convert24MP-s")
		b.ReportMetric(mq24, "queue24MP-s")
		b.ReportMetric(mq24/mc24, "queue/convert24MP")
		fmt.Printf("%-52s %8s %8s  %s\n", fmt.Sprintf("medians of %d interleaved rounds", rounds), "wall", "per file", "runs")
		fmt.Printf("%-52s %7.2fs %7.0fms  %.2f\n", "60 tiny: convert --jobs 2", mc, 1000*mc/60, conv)
		fmt.Printf("%-52s %7.2fs %7.0fms  %.2f  (%.2f×)\n", "60 tiny: broker + 2 × work --jobs 1 + submit --wait", mq, 1000*mq/60, queued, mq/mc)
		fmt.Printf("%-52s %7.2fs %8s  %.2f\n", "1 × 24 MP: convert --jobs 2", mc24, "", conv24)
		fmt.Printf("%-52s %7.2fs %8s  %.2f  (%.2f×, +%.2fs)\n", "1 × 24 MP: broker + 2 × work + submit --wait", mq24, "", queued24, mq24/mc24, mq24-mc24)
	}
}
