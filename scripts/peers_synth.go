//go:build ignore

// peers_synth writes the synthetic 24 MP inputs of scripts/peers.sh:
// N chart DNGs of 6000×4000 pixels (12-bit-ish: black 512, white 16383,
// twelve colour patches on 18% grey, DefaultColorMatrix), named
// synthetic-K.dng in DIR. Each file differs in its patch colours so that no
// peer can reuse a previous result.
//
// Usage: go run scripts/peers_synth.go DIR N
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/rawbatch/rawbatch/pipeline/synthdng"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: go run scripts/peers_synth.go DIR N")
		os.Exit(2)
	}
	dir := os.Args[1]
	n, err := strconv.Atoi(os.Args[2])
	if err != nil || n < 1 {
		fmt.Fprintf(os.Stderr, "peers_synth: N %q: want a positive count\n", os.Args[2])
		os.Exit(2)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fmt.Fprintf(os.Stderr, "peers_synth: %v\n", err)
		os.Exit(1)
	}
	const w, h = 6000, 4000
	for k := 1; k <= n; k++ {
		c := synthdng.Chart{W: w, H: h, Background: [3]float64{0.18, 0.18, 0.18}}
		for i := range 12 {
			x0, y0 := (i%4)*w/4, (i/4)*h/3
			c.Patches = append(c.Patches, synthdng.Patch{X0: x0, Y0: y0, X1: x0 + w/5, Y1: y0 + h/4,
				SRGBLinear: [3]float64{0.05 + 0.05*float64((i+k)%4), 0.1 + 0.1*float64(i%3), 0.6 - 0.04*float64(i)}})
		}
		cw, ch, scene := synthdng.ChartScene(c, 1, synthdng.DefaultColorMatrix, 1)
		p := filepath.Join(dir, fmt.Sprintf("synthetic-%d.dng", k))
		if err := synthdng.WriteFile(p, synthdng.Spec{Width: cw, Height: ch, BlackLevel: 512, WhiteLevel: 16383, Scene: scene}); err != nil {
			fmt.Fprintf(os.Stderr, "peers_synth: %v\n", err)
			os.Exit(1)
		}
	}
}
