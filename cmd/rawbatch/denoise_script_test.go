package main

import (
	"strconv"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/rawbatch/rawbatch/pipeline/synthdng"
)

// synthnoisy FILE ISO: write the noisy step DNG (synthdng.NoisyStep) at
// ISO, with its EXIF ISO tag.
func cmdSynthNoisy(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: synthnoisy FILE ISO")
	}
	iso, err := strconv.Atoi(args[1])
	ts.Check(err)
	ts.Check(synthdng.WriteFile(ts.MkAbs(args[0]), synthdng.NoisyStep(iso, 1)))
}
