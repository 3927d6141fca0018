package pipeline

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rawbatch/rawbatch/budget"
	"github.com/rawbatch/rawbatch/pipeline/synthdng"
)

// BenchmarkWholeFrame24MP converts the realistic 6000×4000 DNG (realFiles)
// to each output format, AVIF and JPEG XL among them (with JPEG and TIFF16
// for reference), and prints per format the encode step's time, the whole
// conversion's time, the file's size, and the peak memory of the
// conversion measured in a child process beside its estimate.
func BenchmarkWholeFrame24MP(b *testing.B) {
	in := realFiles(b, synthdng.RealW, synthdng.RealH, synthdng.RealDNG)[0]
	dir := b.TempDir()
	specs := []string{"main=jpeg", "main=tiff16", "main=avif", "main=avif,depth=10,subsampling=420", "main=avif,speed=9",
		"main=jxl", "main=jxl,effort=3", "main=jxl,depth=16,lossless=true,effort=3", "main=uhdr"}
	fi, err := ReadInfo(in)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		fmt.Printf("%-44s %9s %9s %10s %10s %10s\n", "variant", "encode s", "total s", "size", "estimate", "measured")
		for _, spec := range specs {
			v, err := ParseVariant(spec)
			if err != nil {
				b.Fatal(err)
			}
			s := DefaultSettings()
			s.Format = Format(v.Format)
			s.Variants = []Variant{v}
			out := filepath.Join(dir, "out"+v.Ext())
			t0 := time.Now()
			res, err := ConvertFile(context.Background(), in, out, s)
			if err != nil {
				b.Fatal(err)
			}
			total := time.Since(t0)
			var enc time.Duration
			for _, st := range res.Timings {
				if st.Stage == encodeStage.Name {
					enc += st.Duration
				}
			}
			st, err := os.Stat(out)
			if err != nil {
				b.Fatal(err)
			}
			est := EstimateMemory(fi, s, 1).Total
			peak := measurePeak(b, in, filepath.Join(dir, "m"+v.Ext()), s, 1, est)
			fmt.Printf("%-44s %9.1f %9.1f %10s %10s %10s\n", spec[len("main="):], enc.Seconds(), total.Seconds(),
				budget.FormatSize(st.Size()), budget.FormatSize(est), budget.FormatSize(peak))
		}
	}
}
