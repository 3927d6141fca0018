package main

import (
	"fmt"
	"os"
	"path/filepath"
)

// lensDBSetting is the --lens-db directory: expanded as paths are, made
// absolute (worker processes and the settings hash see one spelling), and
// required to be a directory; "" when not set.
func lensDBSetting(v value) (string, error) {
	dir, err := pathSetting(v)
	if err != nil || dir == "" {
		return "", err
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return "", fmt.Errorf("--lens-db: %w", err)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("--lens-db %s: not a directory", v.String())
	}
	return dir, nil
}
