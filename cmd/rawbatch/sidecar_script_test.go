package main

import (
	"image"
	_ "image/jpeg"
	"os"
	"strconv"

	"github.com/rogpeppe/go-internal/testscript"
)

// imgcolour FILE X Y red|grey: the 3×3 pixels about (X, Y) of FILE are
// red (R above twice G and B) or grey (R and B within 15 % of G, G above
// 10 of 255); with ! they are not.
func cmdImgColour(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 4 || (args[3] != "red" && args[3] != "grey") {
		ts.Fatalf("usage: imgcolour FILE X Y red|grey")
	}
	f, err := os.Open(ts.MkAbs(args[0]))
	ts.Check(err)
	defer f.Close()
	img, _, err := image.Decode(f)
	ts.Check(err)
	x, err := strconv.Atoi(args[1])
	ts.Check(err)
	y, err := strconv.Atoi(args[2])
	ts.Check(err)
	b := img.Bounds()
	var s [3]float64
	n := 0
	for dy := -1; dy <= 1; dy++ {
		for dx := -1; dx <= 1; dx++ {
			p := image.Pt(b.Min.X+x+dx, b.Min.Y+y+dy)
			if !p.In(b) {
				continue
			}
			r, g, bl, _ := img.At(p.X, p.Y).RGBA()
			s[0], s[1], s[2] = s[0]+float64(r)/257, s[1]+float64(g)/257, s[2]+float64(bl)/257
			n++
		}
	}
	if n == 0 {
		ts.Fatalf("%s: (%d, %d) is outside its %v", args[0], x, y, b)
	}
	r, g, bl := s[0]/float64(n), s[1]/float64(n), s[2]/float64(n)
	var is bool
	if args[3] == "red" {
		is = r > 2*g && r > 2*bl
	} else {
		is = g > 10 && r > 0.85*g && r < 1.15*g && bl > 0.85*g && bl < 1.15*g
	}
	if is == neg {
		ts.Fatalf("%s at (%d, %d) is %.0f, %.0f, %.0f: want %s%s", args[0], x, y, r, g, bl, map[bool]string{true: "not ", false: ""}[neg], args[3])
	}
}
