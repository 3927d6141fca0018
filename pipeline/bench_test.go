package pipeline

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/rawbatch/rawbatch/pipeline/synthdng"
)

// writeSynthetic writes a w×h synthetic DNG (smooth gradient with patches)
// for benchmarks.
func writeSynthetic(b testing.TB, dir string, w, h int) string {
	b.Helper()
	p := filepath.Join(dir, fmt.Sprintf("synthetic-%dx%d.dng", w, h))
	if err := synthdng.WriteFile(p, syntheticSpec(w, h)); err != nil {
		b.Fatal(err)
	}
	return p
}

// syntheticSpec is writeSynthetic's chart: twelve patches on 18 % grey,
// black 512, white 16383.
func syntheticSpec(w, h int) synthdng.Spec {
	c := synthdng.Chart{W: w, H: h, Background: [3]float64{0.18, 0.18, 0.18}}
	for i := range 12 {
		x0, y0 := (i%4)*w/4, (i/4)*h/3
		c.Patches = append(c.Patches, synthdng.Patch{X0: x0, Y0: y0, X1: x0 + w/5, Y1: y0 + h/4,
			SRGBLinear: [3]float64{0.05 + 0.05*float64(i%4), 0.1 + 0.1*float64(i%3), 0.6 - 0.04*float64(i)}})
	}
	cw, ch, scene := synthdng.ChartScene(c, 1, synthdng.DefaultColorMatrix, 1)
	return synthdng.Spec{Width: cw, Height: ch, BlackLevel: 512, WhiteLevel: 16383, Scene: scene}
}

// BenchmarkConvert24MP converts one synthetic 6000×4000 DNG to a JPEG and
// reports the time of each stage (ms/op per stage) and megapixels per
// second.
func BenchmarkConvert24MP(b *testing.B) {
	dir := b.TempDir()
	in := writeSynthetic(b, dir, 6000, 4000)
	out := filepath.Join(dir, "out.jpg")
	s := DefaultSettings()
	stage := map[string]time.Duration{}
	b.ResetTimer()
	for b.Loop() {
		res, err := ConvertFile(context.Background(), in, out, s)
		if err != nil {
			b.Fatal(err)
		}
		for _, st := range res.Timings {
			stage[st.Stage] += st.Duration
		}
	}
	for _, st := range Stages {
		b.ReportMetric(float64(stage[st.Name].Milliseconds())/float64(b.N), st.Name+"-ms/op")
	}
	b.ReportMetric(24*float64(b.N)/b.Elapsed().Seconds(), "MP/s")
}
