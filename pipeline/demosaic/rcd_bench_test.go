package demosaic

import "testing"

// BenchmarkRCDKernel demosaics a 12 MP CFA on one goroutine with the
// kernel of rcd.go (rcd) and the retained reference (reference,
// rcd_ref_test.go): a noisy one (noisyCFA: noise, edges and clipping, as
// real files have, where branches would mispredict) and a smooth one (a
// zone plate). ns/op is the CPU time of one 12 MP frame.
// `go test -run '^$' -bench BenchmarkRCDKernel -benchtime 3x ./pipeline/demosaic/`.
func BenchmarkRCDKernel(b *testing.B) {
	const w, h = 4000, 3000
	inputs := []struct {
		name string
		c    CFA
	}{{"noisy", noisyCFA(w, h, phases["GRBG"], false, 1)}, {"smooth", mosaic(zonePlate(w, h), w, h, phases["RGGB"])}}
	dst := make([]float32, w*h*3)
	for _, in := range inputs {
		c := in.c
		c.Threads = 1
		for _, k := range []struct {
			name string
			f    func(CFA, []float32) error
		}{{"rcd", RCD}, {"reference", refRCD}} {
			b.Run(in.name+"/"+k.name, func(b *testing.B) {
				for b.Loop() {
					if err := k.f(c, dst); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
