package main

import (
	"encoding/json"
	"fmt"
	"image"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/rawbatch/rawbatch/pipeline/synthdng"
)

// synthclip FILE hot|nohot: write the highlight DNG (synthdng.ClippedHalf), with 20 hot
// photosites at 16383 in its left half (hot) or without.
func cmdSynthClip(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 || (args[1] != "hot" && args[1] != "nohot") {
		ts.Fatalf("usage: synthclip FILE hot|nohot")
	}
	ts.Check(synthdng.WriteFile(ts.MkAbs(args[0]), synthdng.ClippedHalf(args[1] == "hot")))
}

// clipneutral IMAGE PERCENT: the channel means of IMAGE's right half, 8
// pixels inside its edges (the clipped half of synthclip's DNG), are within
// PERCENT % of each other (largest / smallest − 1), read at 16 bits. It
// prints the means and the spread.
func cmdClipNeutral(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: clipneutral IMAGE PERCENT")
	}
	limit, err := strconv.ParseFloat(args[1], 64)
	ts.Check(err)
	f, err := os.Open(ts.MkAbs(args[0]))
	ts.Check(err)
	defer f.Close()
	img, _, err := image.Decode(f)
	ts.Check(err)
	b := img.Bounds()
	var m [3]float64
	n := 0
	for y := b.Min.Y + 8; y < b.Max.Y-8; y++ {
		for x := b.Min.X + b.Dx()/2 + 8; x < b.Max.X-8; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			m[0] += float64(r)
			m[1] += float64(g)
			m[2] += float64(bl)
			n++
		}
	}
	if n == 0 {
		ts.Fatalf("%s: no pixels in the clipped half", args[0])
	}
	for c := range m {
		m[c] /= float64(n) * 65535
	}
	spread := 100 * (math.Max(m[0], math.Max(m[1], m[2]))/math.Min(m[0], math.Min(m[1], m[2])) - 1)
	ts.Logf("%s: clipped half R, G, B %.4f %.4f %.4f, spread %.2f %%", args[0], m[0], m[1], m[2], spread)
	if (spread <= limit) == neg {
		ts.Fatalf("%s: clipped half R, G, B %.4f %.4f %.4f: spread %.2f %%, want %s %g %%", args[0], m[0], m[1], m[2], spread, map[bool]string{false: "≤", true: ">"}[neg], limit)
	}
}

// wbreport REPORT INPUT FIELD WANT: the report's white_balance of INPUT
// (its input path ends with INPUT) has FIELD (source, reason) containing
// WANT; FIELD r/g or b/g compares the multiplier ratio: WANT is "LO..HI".
func cmdWBReport(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 4 {
		ts.Fatalf("usage: wbreport REPORT INPUT FIELD WANT")
	}
	var r struct {
		Files []struct {
			Input        string `json:"input"`
			WhiteBalance *struct {
				Multipliers [3]float64 `json:"multipliers"`
				Source      string     `json:"source"`
				Reason      string     `json:"reason"`
			} `json:"white_balance"`
		} `json:"files"`
	}
	ts.Check(json.Unmarshal([]byte(ts.ReadFile(args[0])), &r))
	for _, f := range r.Files {
		if !strings.HasSuffix(f.Input, args[1]) {
			continue
		}
		wb := f.WhiteBalance
		if wb == nil {
			ts.Fatalf("%s: no white_balance in the report", args[1])
		}
		var got string
		ok := false
		switch args[2] {
		case "source":
			got, ok = wb.Source, strings.Contains(wb.Source, args[3])
		case "reason":
			got, ok = wb.Reason, strings.Contains(wb.Reason, args[3])
		case "r/g", "b/g":
			v := wb.Multipliers[0]
			if args[2] == "b/g" {
				v = wb.Multipliers[2]
			}
			var lo, hi float64
			_, err := fmt.Sscanf(args[3], "%g..%g", &lo, &hi)
			ts.Check(err)
			got, ok = fmt.Sprintf("%.3f", v), v >= lo && v <= hi
		default:
			ts.Fatalf("unknown field %s", args[2])
		}
		ts.Logf("%s: white_balance %s = %s", args[1], args[2], got)
		if ok == neg {
			ts.Fatalf("%s: white_balance %s = %q, want %s", args[1], args[2], got, args[3])
		}
		return
	}
	ts.Fatalf("%s: not in the report", args[1])
}
