// Package dngopcode reads the DNG opcode lists (OpcodeList1, tag 51008;
// OpcodeList2, 51009; OpcodeList3, 51022; DNG 1.4–1.7 §6 "Opcode List
// Processing") and applies the opcodes rawbatch implements, in pure Go:
// GainMap (ID 9), FixVignetteRadial (ID 3) and WarpRectilinear (ID 1).
//
// A list is big-endian whatever the file's byte order: a LONG count, then
// per opcode its ID (LONG), the DNG version it needs (4 BYTEs), flags
// (LONG: bit 0 optional, bit 1 may be skipped for a preview), the byte
// count of its parameters (LONG) and the parameters. Parse decodes every
// opcode's header and the parameters of the implemented ones; the others
// are kept as raw bytes, named by ID (Name), for the caller to report.
//
// Where the lists apply (DNG §6): OpcodeList1 to the raw data as read
// from the file, OpcodeList2 after linearisation and black subtraction
// (the CFA data normalised 0..1 to the white level), OpcodeList3 to the
// linear RGB image after demosaic.
package dngopcode

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// ID is an opcode's number (DNG §6.2).
type ID uint32

// The opcode IDs of DNG 1.4 (1–13) and 1.6 (14).
const (
	WarpRectilinear      ID = 1
	WarpFisheye          ID = 2
	FixVignetteRadial    ID = 3
	FixBadPixelsConstant ID = 4
	FixBadPixelsList     ID = 5
	TrimBounds           ID = 6
	MapTable             ID = 7
	MapPolynomial        ID = 8
	GainMap              ID = 9
	DeltaPerRow          ID = 10
	DeltaPerColumn       ID = 11
	ScalePerRow          ID = 12
	ScalePerColumn       ID = 13
	WarpRectilinear2     ID = 14

	maxKnownID = WarpRectilinear2
)

const (
	headerBytes = 16      // ID, version, flags, byte count
	maxOpcodes  = 1 << 16 // bounds the count before anything is allocated
	// Parameter sizes in bytes (DNG §6.2).
	vignetteParamBytes     = 7 * 8          // k0..k4, cx, cy
	gainMapFixedParamBytes = 10*4 + 4*8 + 4 // area spec, points, spacing, origin, map planes
	warpPlaneParamBytes    = 6 * 8          // kr0..kr3, kt0, kt1
	warpFixedParamBytes    = 4 + 2*8        // planes, cx, cy
	maxWarpPlanes          = 4
	flagOptional           = 1
	flagPreviewSkippable   = 2
	errPrefix              = "dngopcode: "
)

var names = [...]string{"", "WarpRectilinear", "WarpFisheye", "FixVignetteRadial", "FixBadPixelsConstant",
	"FixBadPixelsList", "TrimBounds", "MapTable", "MapPolynomial", "GainMap", "DeltaPerRow",
	"DeltaPerColumn", "ScalePerRow", "ScalePerColumn", "WarpRectilinear2"}

// Name is the specification's name of the opcode ("GainMap"), or
// "opcode N" for an ID the specification does not define.
func (id ID) Name() string {
	if id >= 1 && id <= maxKnownID {
		return names[id]
	}
	return fmt.Sprintf("opcode %d", uint32(id))
}

func (id ID) String() string { return id.Name() }

// Implemented reports whether Apply functions exist for the opcode:
// GainMap, FixVignetteRadial and WarpRectilinear.
func (id ID) Implemented() bool {
	return id == GainMap || id == FixVignetteRadial || id == WarpRectilinear
}

// Opcode is one entry of a list.
type Opcode struct {
	ID ID
	// Version is the DNG version the opcode needs (4 bytes, e.g. 1.3.0.0).
	Version [4]byte
	// Flags: bit 0 optional, bit 1 may be skipped for previews.
	Flags uint32
	// Params are the opcode's parameter bytes as stored (big-endian).
	Params []byte
	// Exactly one of these is set for an implemented opcode, none for the
	// others.
	GainMap  *GainMapParams
	Vignette *VignetteParams
	Warp     *WarpParams
}

// Optional reports the optional flag (bit 0): a reader that cannot apply
// the opcode may skip it.
func (o Opcode) Optional() bool { return o.Flags&flagOptional != 0 }

// PreviewSkippable reports flag bit 1: the opcode may be skipped for a
// preview-quality render.
func (o Opcode) PreviewSkippable() bool { return o.Flags&flagPreviewSkippable != 0 }

// List is a parsed opcode list in file order.
type List []Opcode

// ErrCorrupt is wrapped by every Parse error.
var ErrCorrupt = errors.New("corrupt DNG opcode list")

// Parse decodes an opcode list (the value of tag 51008, 51009 or 51022).
// An empty b is an empty list. On a truncated or malformed list it returns
// the opcodes before the bad one and an error wrapping ErrCorrupt that
// names the bad opcode by position and name; it never panics and never
// allocates more than a small multiple of len(b).
func Parse(b []byte) (List, error) {
	if len(b) == 0 {
		return nil, nil
	}
	if len(b) < 4 {
		return nil, fmt.Errorf("%s%w: %d bytes, too short for the count", errPrefix, ErrCorrupt, len(b))
	}
	n := binary.BigEndian.Uint32(b)
	rest := b[4:]
	if n > maxOpcodes || uint64(n)*headerBytes > uint64(len(rest)) {
		return nil, fmt.Errorf("%s%w: count %d does not fit in %d bytes", errPrefix, ErrCorrupt, n, len(b))
	}
	out := make(List, 0, n)
	for i := range int(n) {
		if len(rest) < headerBytes {
			name := "?"
			if len(rest) >= 4 {
				name = ID(binary.BigEndian.Uint32(rest)).Name()
			}
			return out, fmt.Errorf("%s%w: opcode %d of %d (%s): truncated header", errPrefix, ErrCorrupt, i+1, n, name)
		}
		op := Opcode{ID: ID(binary.BigEndian.Uint32(rest)), Flags: binary.BigEndian.Uint32(rest[8:])}
		copy(op.Version[:], rest[4:8])
		size := binary.BigEndian.Uint32(rest[12:])
		rest = rest[headerBytes:]
		if uint64(size) > uint64(len(rest)) {
			return out, fmt.Errorf("%s%w: opcode %d of %d (%s): %d parameter bytes, %d left", errPrefix, ErrCorrupt, i+1, n, op.ID.Name(), size, len(rest))
		}
		op.Params = rest[:size:size]
		rest = rest[size:]
		var err error
		switch op.ID {
		case GainMap:
			op.GainMap, err = parseGainMap(op.Params)
		case FixVignetteRadial:
			op.Vignette, err = parseVignette(op.Params)
		case WarpRectilinear:
			op.Warp, err = parseWarp(op.Params)
		}
		if err != nil {
			return out, fmt.Errorf("%s%w: opcode %d of %d (%s): %v", errPrefix, ErrCorrupt, i+1, n, op.ID.Name(), err)
		}
		out = append(out, op)
	}
	return out, nil
}

// reader reads big-endian values, remembering the first shortfall.
type reader struct {
	b   []byte
	bad bool
}

func (r *reader) u32() uint32 {
	if len(r.b) < 4 {
		r.bad = true
		return 0
	}
	v := binary.BigEndian.Uint32(r.b)
	r.b = r.b[4:]
	return v
}

func (r *reader) f64() float64 {
	if len(r.b) < 8 {
		r.bad = true
		return 0
	}
	v := math.Float64frombits(binary.BigEndian.Uint64(r.b))
	r.b = r.b[8:]
	return v
}

func (r *reader) f32() float32 {
	return math.Float32frombits(r.u32())
}

func finite(vs ...float64) bool {
	for _, v := range vs {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return true
}
