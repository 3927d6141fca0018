package main

import (
	"path/filepath"

	"github.com/rawbatch/rawbatch/pipeline/synthdng"
)

// synthInputWH writes one synthetic DNG of w×h displayed pixels named
// name into the inputs (a larger file than synthInput's, for the size
// classes).
func (c *cluster) synthInputWH(name string, w, h int) {
	c.t.Helper()
	ch := synthdng.Chart{W: w, H: h, Background: [3]float64{0.18, 0.18, 0.18},
		Patches: []synthdng.Patch{{X0: w / 4, Y0: h / 4, X1: w / 2, Y1: h / 2, SRGBLinear: [3]float64{0.5, 0.2, 0.1}}}}
	cw, chh, scene := synthdng.ChartScene(ch, 1, synthdng.DefaultColorMatrix, 1)
	if err := synthdng.WriteFile(filepath.Join(c.in, name), synthdng.Spec{Width: cw, Height: chh, BlackLevel: 256,
		WhiteLevel: 16383, Orientation: 1, Scene: scene}); err != nil {
		c.t.Fatal(err)
	}
}

// dropClient closes the test's queue client (the next client() connects
// again, ensuring the streams and buckets): after the broker lost its
// store, the old client's consumers are gone.
func (c *cluster) dropClient() {
	c.mu.Lock()
	qc := c.qc
	c.qc = nil
	c.mu.Unlock()
	if qc != nil {
		qc.Close()
	}
}
