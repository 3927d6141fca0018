package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/rawbatch/rawbatch/pipeline/dngopcode"
	"github.com/rawbatch/rawbatch/pipeline/header"
	"github.com/rawbatch/rawbatch/pipeline/internal/libraw"
)

// The DNG opcode stages (docs/opcodes.md): a DNG's
// OpcodeList1 and 2 (tags 51008, 51009) on the CFA data between the
// white-level stage and LibRaw's processing (opcodes-raw), OpcodeList3
// (51022) on the demosaiced linear camera RGB after the highlights stage
// (opcodes). Applied: GainMap, FixVignetteRadial, WarpRectilinear
// (pipeline/dngopcode); every other opcode is reported by name as not
// applied (OpcodesResult, and a warning) and the conversion goes on.

// opcodesRawStage applies OpcodeList1 and 2. It runs before the stage
// cache stores the image (the cache key has --dng-opcodes); nothing to do
// on a cache hit.
var opcodesRawStage = Stage{Name: "opcodes-raw", Scope: PerFile, Kind: Spatial, Cost: opcodesRawCost,
	Active: opcodesActive, run: stageOpcodesRaw}

// opcodesStage applies OpcodeList3 (and list 1/2 GainMaps of files without
// CFA data, which LibRaw hands over as RGB) to j.camera. It runs after the
// stage cache point: a cached image has not had them.
var opcodesStage = Stage{Name: "opcodes", Scope: PerFile, Kind: Spatial, Cost: opcodesCost,
	Active: opcodesActive, run: stageOpcodes, Band: idleBand(stageOpcodes, opcodesIdle)}

func opcodesActive(s Settings) bool { return s.dngOpcodes() == OpcodesOn }

// maxOpcodeListBytes bounds what is read of one list (a phone's GainMaps
// are a few KiB to a few hundred).
const maxOpcodeListBytes = 64 << 20

// opcodesRawCost: a copy of the CFA data (2 bytes a photosite of the
// visible area) and the levels' histogram (1 MiB), when the file has
// OpcodeList1 or 2; nothing otherwise.
func opcodesRawCost(m memCtx) StepMemory {
	l := opcodeListsOf(m.fi)
	if l == nil || !m.fi.CFA || l.Length[0] == 0 && l.Length[1] == 0 {
		return StepMemory{}
	}
	return StepMemory{Scratch: 2*int64(m.fi.RawWidth)*int64(m.fi.RawHeight) + 1<<20}
}

// opcodesCost: with an OpcodeList3, one more camera image (W×H×3 float32)
// while it runs: WarpRectilinear's output beside its input (GainMap and
// FixVignetteRadial work in place, also on a stage cache hit's image).
func opcodesCost(m memCtx) StepMemory {
	l := opcodeListsOf(m.fi)
	if l == nil || l.Length[2] == 0 && m.fi.CFA {
		return StepMemory{}
	}
	return StepMemory{Scratch: 12 * m.px()}
}

func opcodeListsOf(fi FileInfo) *header.DNGOpcodeLists {
	if fi.Header == nil {
		return nil
	}
	return fi.Header.OpcodeLists
}

// OpcodesResult is what the opcode stages did with a DNG's opcode lists
// (nil for files without any).
type OpcodesResult struct {
	// Applied names the opcodes applied, in the order they ran, as
	// "NAME (list N)" (dngopcode.ID.Name: "GainMap (list 2)").
	Applied []string `json:"applied,omitempty"`
	// NotApplied names the others the same way: opcodes rawbatch does not
	// implement (the specification would stop at a non-optional one;
	// rawbatch converts anyway), the rest of a corrupt list, and all of
	// them with --dng-opcodes off.
	NotApplied []string `json:"not_applied,omitempty"`
	// ByLibRaw names those LibRaw applies itself (MapPolynomial of
	// OpcodeList2 in a lossy DNG, as its decoder's tone curve).
	ByLibRaw []string `json:"by_libraw,omitempty"`
}

// opcodeState is the opcode stages' part of a job.
type opcodeState struct {
	read   bool
	lists  [3]dngopcode.List
	result OpcodesResult
	any    bool
	// deferred: list 1/2 GainMaps left for the opcodes stage (no CFA data).
	deferred []deferredOp
}

type deferredOp struct {
	op   dngopcode.Opcode
	list int
}

func opName(op dngopcode.Opcode, list int) string {
	return fmt.Sprintf("%s (list %d)", op.ID.Name(), list)
}

// lossyDNG is the DNG compression of lossy (JPEG) raw data (DNG 1.4
// §6.1.3: Compression 34892), whose OpcodeList2 MapPolynomial LibRaw's
// lossy_dng_load_raw applies as its decoding curve.
const lossyDNG = 34892

// opcodeByLibRaw says whether LibRaw applies op of list (1..3) itself
// while decoding: the MapPolynomials of OpcodeList2 in a lossy DNG
// (lossy_dng_load_raw's curve), whatever --dng-opcodes says.
func (j *job) opcodeByLibRaw(op dngopcode.Opcode, list int) bool {
	return op.ID == dngopcode.MapPolynomial && list == 2 && j.hdr.Compression == lossyDNG
}

// readOpcodes reads and parses the file's opcode lists once (from where
// the header found them). A list that cannot be read or is corrupt is a
// warning; the opcodes before the bad one are kept.
func (j *job) readOpcodes() {
	o := &j.opcodes
	if o.read {
		return
	}
	o.read = true
	if j.hdr == nil || j.hdr.OpcodeLists == nil {
		return
	}
	loc := j.hdr.OpcodeLists
	f, err := os.Open(j.in)
	if err != nil {
		j.warnings = append(j.warnings, "DNG opcode lists not read: "+err.Error())
		return
	}
	defer f.Close()
	for i := range 3 {
		n := loc.Length[i]
		if n <= 0 {
			continue
		}
		o.any = true
		if n > maxOpcodeListBytes {
			j.warnings = append(j.warnings, fmt.Sprintf("DNG OpcodeList%d of %d bytes not applied (more than %d)", i+1, n, maxOpcodeListBytes))
			o.result.NotApplied = append(o.result.NotApplied, fmt.Sprintf("OpcodeList%d (list %d)", i+1, i+1))
			continue
		}
		b := make([]byte, n)
		if _, err := f.ReadAt(b, loc.Offset[i]); err != nil && !errors.Is(err, io.EOF) {
			j.warnings = append(j.warnings, fmt.Sprintf("DNG OpcodeList%d not read: %v", i+1, err))
			o.result.NotApplied = append(o.result.NotApplied, fmt.Sprintf("OpcodeList%d (list %d)", i+1, i+1))
			continue
		}
		l, err := dngopcode.Parse(b)
		o.lists[i] = l
		if err != nil {
			j.warnings = append(j.warnings, fmt.Sprintf("DNG OpcodeList%d: %v; the rest of the list is not applied", i+1, err))
			o.result.NotApplied = append(o.result.NotApplied, fmt.Sprintf("rest of OpcodeList%d (list %d)", i+1, i+1))
		}
	}
}

// skip records op of list as not applied, with a warning naming it.
func (j *job) skipOpcode(op dngopcode.Opcode, list int, why string) {
	j.opcodes.result.NotApplied = append(j.opcodes.result.NotApplied, opName(op, list))
	j.warnings = append(j.warnings, fmt.Sprintf("DNG OpcodeList%d: %s not applied: %s", list, op.ID.Name(), why))
}

func (j *job) appliedOpcode(op dngopcode.Opcode, list int) {
	j.opcodes.result.Applied = append(j.opcodes.result.Applied, opName(op, list))
	j.lensByOpcodes = true // all three implemented opcodes correct the lens
}

func stageOpcodesRaw(_ context.Context, j *job) error {
	j.readOpcodes()
	o := &j.opcodes
	if len(o.lists[0]) == 0 && len(o.lists[1]) == 0 {
		return nil
	}
	var raw []uint16
	var w, h, top, left, rawW, rawH int
	var blackAt func(r, c int) float64
	gainMaps := false
	for _, l := range o.lists[:2] {
		for _, op := range l {
			gainMaps = gainMaps || op.GainMap != nil
		}
	}
	cfa := j.cached == nil && gainMaps
	if cfa {
		var err error
		raw, w, h, err = j.h.CopyRaw(nil)
		if errors.Is(err, libraw.ErrNoCFA) {
			cfa = false
		} else if err != nil {
			return err
		} else {
			if top, left, rawW, rawH, err = j.h.RawMargins(); err != nil {
				return err
			}
			if blackAt, err = j.blackAt(); err != nil {
				return err
			}
		}
	}
	changed := false
	for li := range 2 {
		list := li + 1
		for _, op := range o.lists[li] {
			switch {
			case j.opcodeByLibRaw(op, list):
				o.result.ByLibRaw = append(o.result.ByLibRaw, opName(op, list))
			case op.GainMap != nil && j.cached != nil && j.info.Filters != 0:
				// Applied to the CFA data when the cached image was
				// decoded (the cache key has --dng-opcodes).
				j.appliedOpcode(op, list)
			case op.GainMap != nil && cfa:
				area := dngopcode.Area{Width: w, Height: h}
				bl := blackAt
				if list == 1 {
					// List 1: the stored raw image, as read (no black
					// subtracted); the visible area sits at the margins.
					area = dngopcode.Area{Top: top, Left: left, Width: rawW, Height: rawH}
					bl = func(int, int) float64 { return 0 }
				}
				op.GainMap.ApplyCFA(raw, w, h, area, bl)
				changed = true
				j.appliedOpcode(op, list)
			case op.GainMap != nil:
				// No CFA data (LibRaw hands the file over as RGB): on the
				// demosaiced image, by the opcodes stage.
				o.deferred = append(o.deferred, deferredOp{op, list})
			default:
				j.skipOpcode(op, list, notAppliedWhy(op, list))
			}
		}
	}
	if !changed {
		return nil
	}
	err := j.h.StoreRaw(raw)
	// The copy is garbage now: give it back to the system before LibRaw
	// allocates its image (as the white-balance fallback does), so the
	// demosaic's peak does not hold it too.
	j.giveBack()
	return err
}

// notAppliedWhy says why op is not applied.
func notAppliedWhy(op dngopcode.Opcode, list int) string {
	switch {
	case op.ID.Implemented():
		return fmt.Sprintf("rawbatch applies %s only in OpcodeList3", op.ID.Name())
	case op.Optional():
		return "not implemented by rawbatch (optional)"
	}
	return "not implemented by rawbatch"
}

// blackAt returns the black level (DN) of each photosite of the visible
// area: LibRaw's per-colour black (Levels) at the photosite's CFA colour,
// with its black pattern's cell in place of the pattern's mean.
func (j *job) blackAt() (func(r, c int) float64, error) {
	lv, err := j.h.Levels()
	if err != nil {
		return nil, err
	}
	pat, err := j.h.CFAPattern(48, 48)
	if err != nil {
		return nil, err
	}
	var mean float64
	for _, v := range lv.BlackPattern {
		mean += v / float64(len(lv.BlackPattern))
	}
	return func(r, c int) float64 {
		b := lv.Black[pat[(r%48)*48+c%48]&3]
		if len(lv.BlackPattern) > 0 {
			b += lv.BlackPattern[(r%lv.BlackPatternRows)*lv.BlackPatternCols+c%lv.BlackPatternCols] - mean
		}
		return b
	}, nil
}

func stageOpcodes(_ context.Context, j *job) error {
	j.readOpcodes()
	o := &j.opcodes
	if len(o.lists[2]) == 0 && len(o.deferred) == 0 {
		return nil
	}
	w, h, c := j.img.W, j.img.H, j.colors
	area := dngopcode.Area{Width: w, Height: h}
	if j.crop != nil && j.cropFrame[0] > 0 && (j.crop.W != j.cropFrame[0] || j.crop.H != j.cropFrame[1]) {
		// The crop stage already cut the picture area out: list 3
		// refers to the uncropped image (DNG §6), the buffer sits in it
		// at the crop's origin.
		area = dngopcode.Area{Top: j.crop.Y, Left: j.crop.X, Width: j.cropFrame[0], Height: j.cropFrame[1]}
	}
	half := j.settings.HalfSize
	for _, d := range o.deferred {
		g := *d.op.GainMap
		if d.list == 1 || half {
			// Areas in other coordinates than the decoded image: not
			// mapped (rare: list-1 maps of RGB files, half-size).
			why := "its area is in stored raw pixels, which an RGB file's image does not have"
			if half {
				why = "its area is in full-size pixels (--half-size)"
			}
			j.skipOpcode(d.op, d.list, why)
			continue
		}
		g.ApplyImage(j.camera, w, h, c, area)
		j.appliedOpcode(d.op, d.list)
	}
	for _, op := range o.lists[2] {
		var implausible error
		if op.Vignette != nil {
			implausible = op.Vignette.CheckGains()
		}
		switch {
		case implausible != nil:
			j.skipOpcode(op, 3, implausible.Error())
			continue
		case op.Vignette != nil:
			op.Vignette.ApplyImage(j.camera, w, h, c, area)
		case op.Warp != nil:
			// A new image, the job's own; the input is garbage now: give
			// it back before the next steps allocate, as the lens step
			// does (without it, a 12 MP warp's capture sharpening peaked
			// on both images, 1.20× the estimate).
			j.camera = op.Warp.ApplyImage(j.camera, w, h, c, area)
			j.giveBack()
		case op.GainMap != nil && !half:
			op.GainMap.ApplyImage(j.camera, w, h, c, area)
		case op.GainMap != nil:
			j.skipOpcode(op, 3, "its area is in full-size pixels (--half-size)")
			continue
		default:
			j.skipOpcode(op, 3, notAppliedWhy(op, 3))
			continue
		}
		j.appliedOpcode(op, 3)
	}
	return nil
}

// opcodesResult is Result.Opcodes: nil when the file has no opcode list.
// With --dng-opcodes off (the stages not planned) every opcode is listed
// as not applied, but those LibRaw applies while decoding (by_libraw).
func (j *job) opcodesResult() *OpcodesResult {
	if j.settings.dngOpcodes() == OpcodesOff {
		j.readOpcodes()
		for i, l := range j.opcodes.lists {
			for _, op := range l {
				if j.opcodeByLibRaw(op, i+1) {
					// LibRaw applies them while decoding, off or not.
					j.opcodes.result.ByLibRaw = append(j.opcodes.result.ByLibRaw, opName(op, i+1))
					continue
				}
				j.opcodes.result.NotApplied = append(j.opcodes.result.NotApplied, opName(op, i+1))
			}
		}
	}
	if !j.opcodes.any {
		return nil
	}
	r := j.opcodes.result
	return &r
}

// opcodesIdle: the file has no OpcodeList3 and no gain map deferred to it.
func opcodesIdle(j *job) bool {
	j.readOpcodes()
	return len(j.opcodes.lists[2]) == 0 && len(j.opcodes.deferred) == 0
}
