package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"

	"github.com/rawbatch/rawbatch/pipeline"
	"github.com/rogpeppe/go-internal/testscript"
)

// libRawCondition adds the script condition [libraw021]: the linked LibRaw
// (read at run time) is 0.21 or later, so lossy CR3, Sony lossless ARW and
// the newer DNG variants decode.
func libRawCondition(cond string) (bool, error) {
	switch cond {
	case "libraw021":
		var maj, min, patch int
		if _, err := fmt.Sscanf(pipeline.LibRawInfo().Short, "%d.%d.%d", &maj, &min, &patch); err != nil {
			return false, err
		}
		return maj > 0 || min >= 21, nil
	}
	return false, fmt.Errorf("unknown condition %q", cond)
}

// nomatrix FILE: rename the ColorMatrix1 tag (50721, SRATIONAL ×9) of a
// synthetic DNG to a private tag, so LibRaw has no colour data for it.
func cmdNoMatrix(ts *testscript.TestScript, neg bool, args []string) {
	p := ts.MkAbs(args[0])
	b, err := os.ReadFile(p)
	ts.Check(err)
	var entry [8]byte
	binary.LittleEndian.PutUint16(entry[0:], 50721)
	binary.LittleEndian.PutUint16(entry[2:], 10)
	binary.LittleEndian.PutUint32(entry[4:], 9)
	i := bytes.Index(b, entry[:])
	if i < 0 {
		ts.Fatalf("%s: no ColorMatrix1 entry", p)
	}
	binary.LittleEndian.PutUint16(b[i:], 65000)
	ts.Check(os.WriteFile(p, b, 0o644))
}
