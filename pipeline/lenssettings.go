package pipeline

import (
	"fmt"
	"os"
	"sync"

	"github.com/rawbatch/rawbatch/pipeline/internal/lensfun"
)

// validateLensDB reports a LensDB that is not a directory of lensfun XML
// files that load.
func (s Settings) validateLensDB() error {
	if s.LensDB == "" {
		return nil
	}
	fi, err := os.Stat(s.LensDB)
	if err != nil {
		return fmt.Errorf("lens database: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("lens database %s: not a directory", s.LensDB)
	}
	if err := checkLensDB(s.LensDB); err != nil {
		return fmt.Errorf("lens database: %w", err)
	}
	return nil
}

// lensDBChecked keeps the result of checkLensDB per directory and
// listing (names, sizes, modification times), so settings validated
// several times load the directory once.
var lensDBChecked sync.Map

// checkLensDB loads the *.xml files of dir with lensfun once
// (lensfun.CheckDir: regular files only, parsed, closed right away) and
// returns its error, which names the file.
func checkLensDB(dir string) error {
	names, err := lensfun.XMLFiles(dir)
	if err != nil {
		return err
	}
	key := dir
	for _, n := range names {
		fi, err := os.Stat(n)
		if err != nil {
			return err
		}
		key += fmt.Sprintf("\x00%s %d %d", n, fi.Size(), fi.ModTime().UnixNano())
	}
	if v, ok := lensDBChecked.Load(key); ok {
		err, _ := v.(error)
		return err
	}
	err = lensfun.CheckDir(dir)
	lensDBChecked.Store(key, err)
	return err
}
