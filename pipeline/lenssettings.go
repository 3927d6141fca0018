package pipeline

import (
	"fmt"
	"os"
	"sync"

	"github.com/rawbatch/rawbatch/pipeline/internal/lensfun"
)

// LensMode says whether the lens stage corrects the lens with lensfun
// (docs/lens.md).
type LensMode string

const (
	// LensAuto: look the camera and lens up in lensfun's database and
	// correct vignetting, distortion and transverse chromatic aberration
	// when a profile matches. The default.
	LensAuto LensMode = "auto"
	// LensOff: no lens correction (the stage is not planned).
	LensOff LensMode = "off"
)

// LensNames lists the accepted --lens values.
const LensNames = "auto|off"

// ParseLens accepts one of LensNames, case-insensitively.
func ParseLens(s string) (LensMode, error) {
	return parseChoice[LensMode]("lens correction", LensNames, s)
}

// lens is s.Lens, "" meaning the default (auto).
func (s Settings) lens() LensMode {
	if s.Lens == "" {
		return LensAuto
	}
	return s.Lens
}

// validateLens reports an unknown Lens mode, and a LensDB that is not a
// directory.
func (s Settings) validateLens() error {
	if s.Lens != "" {
		if _, err := ParseLens(string(s.Lens)); err != nil {
			return err
		}
	}
	if s.LensDB != "" {
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
