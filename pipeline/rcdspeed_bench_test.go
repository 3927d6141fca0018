package pipeline

import (
	"fmt"
	"path/filepath"
	"runtime"
	"testing"
	"time"
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
