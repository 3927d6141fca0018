package pipeline

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkFusedVsStages converts one synthetic 6000×4000 DNG to a
// full-size JPEG with the fused pass and with the same steps run one after
// the other (ConvertOptions.unfused), alternately, so that both see the
// same load, and reports per conversion the time of the per-pixel steps
// after demosaic (camera-matrix to quantise: the fused pass, including the
// time its rows took inside encode) and of encode, for each.
func BenchmarkFusedVsStages(b *testing.B) {
	dir := b.TempDir()
	in := writeSynthetic(b, dir, 6000, 4000)
	s := DefaultSettings()
	vs := s.OutputVariants()
	outs := []OutputSpec{{Variant: vs[0], Path: filepath.Join(dir, "out.jpg")}}
	pointwise := map[string]bool{"camera-matrix": true, "exposure": true, "tone": true, "output-space": true, "orientation": true, "quantise": true}
	var sum [2]struct{ px, enc time.Duration }
	for b.Loop() {
		for k, unfused := range []bool{false, true} {
			res, err := convertFile(context.Background(), in, outs, s, ConvertOptions{unfused: unfused})
			if err != nil {
				b.Fatal(err)
			}
			for _, st := range res.Timings {
				switch {
				case pointwise[st.Stage]:
					sum[k].px += st.Duration
				case st.Stage == "encode":
					sum[k].enc += st.Duration
				}
			}
		}
	}
	n := float64(b.N) * float64(time.Millisecond)
	b.ReportMetric(float64(sum[0].px)/n, "fused-ms/op")
	b.ReportMetric(float64(sum[1].px)/n, "stages-ms/op")
	b.ReportMetric(float64(sum[0].enc)/n, "fused-encode-ms/op")
	b.ReportMetric(float64(sum[1].enc)/n, "stages-encode-ms/op")
}
