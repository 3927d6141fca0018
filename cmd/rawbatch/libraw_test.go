package main

import (
	"fmt"

	"github.com/rawbatch/rawbatch/pipeline"
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
