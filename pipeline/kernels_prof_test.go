package pipeline

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkConvert24MPISO1600Lens converts a synthetic 6000×4000 DNG at
// ISO 1600 naming a lens lensfun knows (denoise, lens, capture sharpening
// at their defaults) and reports each step's time (ms/op per step).
func BenchmarkConvert24MPISO1600Lens(b *testing.B) {
	dir := os.Getenv("RAWBATCH_BENCH_DIR")
	if dir == "" {
		dir = b.TempDir()
	}
	in := filepath.Join(dir, "synthetic-6000x4000-iso1600-lens.dng")
	if _, err := os.Stat(in); err != nil {
		in = writeSyntheticISOLens(b, dir, 6000, 4000, 1600, true)
	}
	out := filepath.Join(b.TempDir(), "out.jpg")
	s := DefaultSettings()
	steps := map[string]float64{}
	var order []string
	for b.Loop() {
		res, err := ConvertFile(context.Background(), in, out, s)
		if err != nil {
			b.Fatal(err)
		}
		for _, st := range res.Timings {
			if _, ok := steps[st.Stage]; !ok {
				order = append(order, st.Stage)
			}
			steps[st.Stage] += float64(st.Duration.Microseconds()) / 1000
		}
	}
	for _, name := range order {
		b.ReportMetric(steps[name]/float64(b.N), name+"-ms/op")
	}
}
