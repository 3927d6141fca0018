package pipeline

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/rawbatch/rawbatch/pipeline/synthdng"
)

// BenchmarkFusedVsStages converts one realistic 6000×4000 DNG (realFiles) to a
// full-size JPEG with the fused pass and with the same steps run one after
// the other (ConvertOptions.unfused), alternately, so that both see the
// same load, and reports per conversion the time of the per-pixel steps
// after demosaic (camera-matrix to quantise: the fused pass, the time
// spent making the encoder's bands) and of encode, for each.
func BenchmarkFusedVsStages(b *testing.B) {
	dir := b.TempDir()
	in := realFiles(b, synthdng.RealW, synthdng.RealH, synthdng.RealDNG)[0]
	s := DefaultSettings()
	vs := s.OutputVariants()
	outs := []OutputSpec{{Variant: vs[0], Path: filepath.Join(dir, "out.jpg")}}
	pointwise := map[string]bool{"camera-matrix": true, "exposure": true, "tone": true, "output-space": true, "orientation": true, "quantise": true}
	var sum [2]struct{ px, enc time.Duration }
	for b.Loop() {
		for k, unfused := range []bool{false, true} {
			res, err := ConvertOutputs(context.Background(), in, outs, s, ConvertOptions{unfused: unfused})
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

// BenchmarkFusedPass24MP runs the per-pixel steps after demosaic
// (camera-matrix to quantise) of a 6000×4000 full-size JPEG on an image in
// memory, fused (runPass, the rows then drained as the encoder would ask
// for them) and one after the other (each stage's run over the whole
// image, the quantised RGBA image made), without LibRaw or an encoder, so
// only the Go pixel work is timed. It reports, beside ns/op, the process's
// CPU time per op (cpu-ms/op), which a loaded machine disturbs less than
// wall time.
func BenchmarkFusedPass24MP(b *testing.B) {
	const w, h = 6000, 4000
	s := DefaultSettings()
	vs := s.OutputVariants()
	plan := PlanVariants(w, h, vs, s)
	var steps []Step
	for _, st := range plan.Steps {
		if st.Stage == cameraMatrixStage.Name || len(steps) > 0 && st.Stage != encodeStage.Name {
			steps = append(steps, st)
		}
	}
	src := make([]float32, w*h*3)
	for i := range src {
		src[i] = float32(i%1031) / 1100
	}
	cam := make([]float32, len(src))
	for _, mode := range []string{"fused", "stages"} {
		b.Run(mode, func(b *testing.B) {
			var cpu time.Duration
			for range b.N {
				b.StopTimer()
				copy(cam, src)
				j := &job{settings: s, colors: 3, img: Image{W: w, H: h}, camera: cam}
				for k := range 3 {
					j.info.RGBCam[k][k] = 1
				}
				j.outs = []*variantJob{{spec: OutputSpec{Variant: vs[0]}}}
				c0 := cpuTime()
				b.StartTimer()
				if mode == "fused" {
					if _, err := j.runPass(context.Background(), steps, j.outs); err != nil {
						b.Fatal(err)
					}
					r := j.outs[0].rows8
					band := make([]byte, r.Bands.Rows*3*r.W)
					for y0 := 0; y0 < r.H; y0 += r.Bands.Rows {
						r.Bands.Fill(y0, band[:min(r.Bands.Rows, r.H-y0)*3*r.W])
					}
				} else {
					for _, st := range steps {
						j.cur = j.outs[0]
						if st.Shared() {
							j.cur = nil
						}
						if err := st.stage.run(context.Background(), j); err != nil {
							b.Fatal(err)
						}
					}
				}
				b.StopTimer()
				cpu += cpuTime() - c0
			}
			b.ReportMetric(float64(cpu)/float64(b.N)/float64(time.Millisecond), "cpu-ms/op")
		})
	}
}
