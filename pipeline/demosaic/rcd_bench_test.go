package demosaic

import "testing"

// BenchmarkRCDKernel demosaics a 12 MP noisy CFA (noisyCFA: noise, edges
// and clipping, where the kernel's branches would mispredict) on one
// goroutine, with the kernel of rcd.go (rcd) and the retained reference
// (reference, rcd_ref_test.go): ns/op is the CPU time of one 12 MP frame.
// `go test -run '^$' -bench BenchmarkRCDKernel -benchtime 3x ./pipeline/demosaic/`.
func BenchmarkRCDKernel(b *testing.B) {
	const w, h = 4000, 3000
	c := noisyCFA(w, h, phases["GRBG"], false, 1)
	c.Threads = 1
	dst := make([]float32, w*h*3)
	for _, k := range []struct {
		name string
		f    func(CFA, []float32) error
	}{{"rcd", RCD}, {"reference", refRCD}} {
		b.Run(k.name, func(b *testing.B) {
			for b.Loop() {
				if err := k.f(c, dst); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
