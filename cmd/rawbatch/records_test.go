package main

import (
	"image"
	"math"
	"os"
	"strconv"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/rawbatch/rawbatch/pipeline/synthdng"
)

// waitfile PATH: wait until PATH exists (a test gate's .ready file); fail
// after a minute, when the other side is surely stuck.
func cmdWaitFile(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: waitfile PATH")
	}
	p := ts.MkAbs(args[0])
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(p); err == nil {
			return
		}
	}
	ts.Fatalf("%s did not appear within a minute", args[0])
}

// imgdiff A B < LIMIT (or > LIMIT): the mean absolute difference of the
// 8-bit RGB samples of images A and B (of the same size) is below (above)
// LIMIT. Images are compared by tolerance, never byte for byte.
func cmdImgDiff(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 4 || (args[2] != "<" && args[2] != ">") {
		ts.Fatalf("usage: imgdiff A B <|> LIMIT")
	}
	limit, err := strconv.ParseFloat(args[3], 64)
	ts.Check(err)
	load := func(name string) image.Image {
		f, err := os.Open(ts.MkAbs(name))
		ts.Check(err)
		defer f.Close()
		img, _, err := image.Decode(f)
		ts.Check(err)
		return img
	}
	a, b := load(args[0]), load(args[1])
	if a.Bounds().Size() != b.Bounds().Size() {
		ts.Fatalf("%s is %v, %s is %v", args[0], a.Bounds().Size(), args[1], b.Bounds().Size())
	}
	var sum float64
	n := 0
	ab, bb := a.Bounds(), b.Bounds()
	for y := 0; y < ab.Dy(); y++ {
		for x := 0; x < ab.Dx(); x++ {
			r1, g1, b1, _ := a.At(ab.Min.X+x, ab.Min.Y+y).RGBA()
			r2, g2, b2, _ := b.At(bb.Min.X+x, bb.Min.Y+y).RGBA()
			for _, d := range [3]float64{float64(r1) - float64(r2), float64(g1) - float64(g2), float64(b1) - float64(b2)} {
				sum += math.Abs(d) / 257
				n++
			}
		}
	}
	mean := sum / float64(max(n, 1))
	ok := mean < limit
	if args[2] == ">" {
		ok = mean > limit
	}
	if ok == neg {
		ts.Fatalf("mean difference of %s and %s is %.3f, want %s %s", args[0], args[1], mean, args[2], args[3])
	}
	ts.Logf("mean difference %.3f", mean)
}

// synthat PATH ORIENTATION TIME [MODEL]: a synthetic DNG (as synthdng)
// whose DateTimeOriginal is TIME ("2024-05-06T07:08:09"), and whose camera
// Model is MODEL when given, for scripts that need two different
// photographs.
func cmdSynthDNGAt(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 3 && len(args) != 4 {
		ts.Fatalf("usage: synthat PATH ORIENTATION TIME [MODEL]")
	}
	model := ""
	if len(args) == 4 {
		model = args[3]
	}
	o, err := strconv.Atoi(args[1])
	ts.Check(err)
	when, err := time.ParseInLocation("2006-01-02T15:04:05", args[2], time.Local)
	ts.Check(err)
	c := synthdng.Chart{W: 48, H: 32, Background: [3]float64{0.18, 0.18, 0.18},
		Patches: []synthdng.Patch{{X0: 0, Y0: 0, X1: 8, Y1: 8, SRGBLinear: [3]float64{0.6, 0.05, 0.05}}}}
	w, h, scene := synthdng.ChartScene(c, o, synthdng.DefaultColorMatrix, 1)
	ts.Check(synthdng.WriteFile(ts.MkAbs(args[0]), synthdng.Spec{Width: w, Height: h, BlackLevel: 256,
		WhiteLevel: 16383, Orientation: o, Scene: scene, Timestamp: when, Model: model}))
}
