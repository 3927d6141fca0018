package pipeline

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/rawbatch/rawbatch/pipeline/internal/filehash"
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
	}
	return nil
}

// LensHashParts returns the lens settings of s as strings for
// batch.SettingsHash: the mode, the forced lens, and with --lens-db the
// directory and the content hash of each of its XML files (a changed
// profile converts the outputs again). Nothing but the mode with --lens
// off.
func LensHashParts(s Settings) []string {
	parts := []string{"lens=" + string(s.lens())}
	if s.lens() == LensOff {
		return parts
	}
	parts = append(parts, "lens-model="+s.LensModel)
	if s.LensDB != "" {
		parts = append(parts, "lens-db="+s.LensDB)
		names, _ := filepath.Glob(filepath.Join(s.LensDB, "*.xml"))
		sort.Strings(names)
		for _, n := range names {
			h, _, _, err := filehash.File(n, nil)
			if err != nil {
				h = err.Error()
			}
			parts = append(parts, filepath.Base(n)+"="+h)
		}
	}
	return parts
}
