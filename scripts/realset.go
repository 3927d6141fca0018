//go:build ignore

// realset writes the realistic 24 MP benchmark set (docs/performance.md,
// synthdng.RealSet) into the cache build/realset-vN of the repository and
// prints the files' paths, one a line: N files of 6000×4000 made from
// testdata/raw/canond30_CRW.CRW developed by rawbatch, each another crop
// with other texture and ISO 1600 noise. Files 1, 3, 5, ... (counting from
// 1) are lossless JPEG DNGs, files 2, 4, ... Sony lossless ARWs; with
// -dng all are DNGs. Files already in the cache are kept.
//
// Usage: go run scripts/realset.go [-dng] N (from the repository's root,
// with the LibRaw env of scripts/libraw.sh).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"

	"github.com/rawbatch/rawbatch/pipeline"
	"github.com/rawbatch/rawbatch/pipeline/synthdng"
)

func main() {
	dngOnly := flag.Bool("dng", false, "lossless JPEG DNGs only")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: go run scripts/realset.go [-dng] N")
		os.Exit(2)
	}
	n, err := strconv.Atoi(flag.Arg(0))
	if err != nil || n < 1 {
		fmt.Fprintf(os.Stderr, "realset: N %q: want a positive count\n", flag.Arg(0))
		os.Exit(2)
	}
	formats := make([]synthdng.RealSetFormat, n)
	for k := range formats {
		formats[k] = synthdng.RealDNG
		if k%2 == 1 && !*dngOnly {
			formats[k] = synthdng.RealARW
		}
	}
	paths, err := synthdng.RealSet(".", synthdng.RealW, synthdng.RealH, formats, func(in, out string) error {
		s := pipeline.DefaultSettings()
		outs := []pipeline.OutputSpec{{Variant: s.OutputVariants()[0], Path: out}}
		_, err := pipeline.ConvertOutputs(context.Background(), in, outs, s, pipeline.ConvertOptions{})
		return err
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "realset: %v\n", err)
		os.Exit(1)
	}
	for _, p := range paths {
		fmt.Println(p)
	}
}
