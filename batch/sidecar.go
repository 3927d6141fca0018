package batch

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/rawbatch/rawbatch/pipeline"
	"github.com/rawbatch/rawbatch/pipeline/header"
	"github.com/rawbatch/rawbatch/pipeline/sidecar"
)

// readXMP returns what the XMP of the raw file at path says: the packet
// inside a DNG (its tag 700, header.ReadOwnXMP; other raws' are not read
// at planning, which would cost a read of every file's head) with its
// sidecar's fields over it (sidecar.Read), and the warnings of both (a
// malformed packet or sidecar, two sidecars).
func readXMP(path string) (sidecar.Meta, []string) {
	var own sidecar.Meta
	var warns []string
	if strings.EqualFold(filepath.Ext(path), ".dng") {
		own, warns = readOwnXMP(path)
	}
	side, _, sw := sidecar.Read(path)
	return own.Over(side), append(warns, sw...)
}

// readOwnXMP is header.ReadOwnXMP in the planning process: a file that
// cannot be read gives nothing (its conversion reports it), and a parser
// panic on a damaged file a warning instead of the run's end.
func readOwnXMP(path string) (m sidecar.Meta, warns []string) {
	defer func() {
		if p := recover(); p != nil {
			m, warns = sidecar.Meta{}, []string{fmt.Sprintf("%s: its XMP packet (tag 700) could not be read: %v", path, p)}
		}
	}()
	m, warns, err := header.ReadOwnXMP(path)
	if err != nil {
		return sidecar.Meta{}, nil
	}
	return m, warns
}

// developFor returns the settings the file whose XMP says m converts
// with: s with the file's own Edit (pipeline.Edit) from m's develop
// settings as s.Sidecar takes them. geometry: tiff:Orientation and the
// crop (crs:HasCrop true; a crop of the whole picture unturned is none);
// basic: also crs:Exposure2012 and the white balance (crs:Temperature and
// crs:Tint unless crs:WhiteBalance is "As Shot" or "Auto", which keep the
// run's --wb). meta and off: s unchanged.
func developFor(s pipeline.Settings, m sidecar.Meta) pipeline.Settings {
	d := m.Develop
	if d == nil || s.Sidecar != "geometry" && s.Sidecar != "basic" {
		return s
	}
	e := pipeline.Edit{Orientation: d.Orientation}
	if c := d.Crop; c != nil && c.Has && (c.Top != 0 || c.Left != 0 || c.Bottom != 1 || c.Right != 1 || c.Angle != 0) {
		e.Crop = &pipeline.EditCrop{Top: c.Top, Left: c.Left, Bottom: c.Bottom, Right: c.Right, Angle: c.Angle}
	}
	if s.Sidecar == "basic" {
		if d.Exposure != nil {
			e.Exposure = *d.Exposure
		}
		if wb := d.WhiteBalance; wb != nil && wb.Temperature > 0 && !strings.EqualFold(wb.Mode, "As Shot") && !strings.EqualFold(wb.Mode, "Auto") {
			e.Temperature, e.Tint = wb.Temperature, wb.Tint
		}
	}
	s.Edit = e
	return s
}
