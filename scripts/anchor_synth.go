//go:build ignore

// anchor_synth writes a synthetic 24 MP chart DNG with an embedded preview
// (scripts/peers_synth.go's chart, with the small RGB preview in IFD0), so
// that the exposure anchor measures it: the input of the anchor's
// before/after measurements (docs/pipeline.md "Exposure anchor").
//
// Usage: go run scripts/anchor_synth.go OUT.dng
package main

import (
	"fmt"
	"os"

	"github.com/rawbatch/rawbatch/pipeline/synthdng"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: go run scripts/anchor_synth.go OUT.dng")
		os.Exit(2)
	}
	const w, h = 6000, 4000
	c := synthdng.Chart{W: w, H: h, Background: [3]float64{0.18, 0.18, 0.18}}
	for i := range 12 {
		x0, y0 := (i%4)*w/4, (i/4)*h/3
		c.Patches = append(c.Patches, synthdng.Patch{X0: x0, Y0: y0, X1: x0 + w/5, Y1: y0 + h/4,
			SRGBLinear: [3]float64{0.05 + 0.05*float64(i%4), 0.1 + 0.1*float64(i%3), 0.6 - 0.04*float64(i)}})
	}
	cw, ch, scene := synthdng.ChartScene(c, 1, synthdng.DefaultColorMatrix, 1)
	sp := synthdng.Spec{Width: cw, Height: ch, BlackLevel: 512, WhiteLevel: 16383, Scene: scene, ThumbnailIFD0: true}
	if err := synthdng.WriteFile(os.Args[1], sp); err != nil {
		fmt.Fprintf(os.Stderr, "anchor_synth: %v\n", err)
		os.Exit(1)
	}
}
