package main

import (
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/rawbatch/rawbatch/pipeline/synthdng"
)

// synthopcode FILE vignette|gainmap|unknown: write one of the opcode
// flat fields of package synthdng: vignetted with FixVignetteRadial in
// OpcodeList3, gain-mapped with GainMaps in OpcodeList2, or flat with an
// opcode of ID 99 and a MapPolynomial in OpcodeList3 (neither applied).
func cmdSynthOpcode(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: synthopcode FILE vignette|gainmap|unknown")
	}
	var s synthdng.Spec
	switch args[1] {
	case "vignette":
		s = synthdng.FlatVignetted()
	case "gainmap":
		s = synthdng.FlatGainMapped()
	case "unknown":
		s = synthdng.FlatWithOpcode(synthdng.OpcodeList(synthdng.Opcode{ID: 99, Params: []byte{1, 2, 3, 4}},
			synthdng.Opcode{ID: 8, Params: make([]byte, 36)}))
	default:
		ts.Fatalf("synthopcode: unknown kind %q", args[1])
	}
	ts.Check(synthdng.WriteFile(ts.MkAbs(args[0]), s))
}
