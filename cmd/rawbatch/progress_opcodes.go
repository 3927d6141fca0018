package main

import (
	"strings"

	"github.com/rawbatch/rawbatch/batch"
)

// opcodeNote is the part of a converted file's text line that names the
// DNG opcodes not applied ("DNG opcodes not applied: MapPolynomial (list
// 3)"), "" when every opcode was applied or the file has none.
func opcodeNote(fr batch.FileResult) string {
	o := fr.Result.Opcodes
	if o == nil || len(o.NotApplied) == 0 {
		return ""
	}
	return "DNG opcodes not applied: " + strings.Join(o.NotApplied, ", ")
}
