package batch

import (
	"errors"
	"io/fs"
	"os"
)

// reasonDeleted is the skip reason of an input that disappeared while it
// was being converted (a card being cleared, a sync tool moving it).
const reasonDeleted = "deleted during its conversion"

// inputDeleted reports whether the input at path no longer exists (its
// conversion failed or its record cannot be made because of that).
func inputDeleted(path string) bool {
	_, err := os.Lstat(path)
	return errors.Is(err, fs.ErrNotExist)
}
