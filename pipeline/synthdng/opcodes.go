package synthdng

import (
	"encoding/binary"
	"math"

	"github.com/rawbatch/rawbatch/pipeline/tifftag"
)

// DNG opcode lists (DNG 1.4 §6) for tests of the opcode stages: the
// encoding of a list, of the three opcodes rawbatch applies, and flat
// fields distorted by a known falloff that the opcode undoes.

// Opcode is one opcode of a list as stored: its ID (DNG §6.2: 1
// WarpRectilinear, 3 FixVignetteRadial, 9 GainMap, ...), flags (bit 0
// optional) and big-endian parameter bytes. Version is written 1.3.0.0.
type Opcode struct {
	ID     uint32
	Flags  uint32
	Params []byte
}

// OpcodeList encodes ops as the value of OpcodeList1/2/3 (big-endian: the
// count, then per opcode ID, version, flags, byte count, parameters).
func OpcodeList(ops ...Opcode) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(len(ops)))
	for _, o := range ops {
		b = binary.BigEndian.AppendUint32(b, o.ID)
		b = append(b, 1, 3, 0, 0)
		b = binary.BigEndian.AppendUint32(b, o.Flags)
		b = binary.BigEndian.AppendUint32(b, uint32(len(o.Params)))
		b = append(b, o.Params...)
	}
	return b
}

// OpcodeListTag is a Tag carrying list (51008, 51009 or 51022) in IFD0,
// which is the raw IFD when Spec.ThumbnailIFD0 is false.
func OpcodeListTag(id uint16, list []byte) Tag {
	return Tag{Dir: tifftag.DirImage, ID: id, Undefined: list}
}

func appendF64(b []byte, vs ...float64) []byte {
	for _, v := range vs {
		b = binary.BigEndian.AppendUint64(b, math.Float64bits(v))
	}
	return b
}

func appendU32(b []byte, vs ...uint32) []byte {
	for _, v := range vs {
		b = binary.BigEndian.AppendUint32(b, v)
	}
	return b
}

// VignetteOpcode is FixVignetteRadial (ID 3): gain 1 + k0 r² + k1 r⁴ + ...
// + k4 r¹⁰ about the centre (cx, cy), fractions of the width and height.
func VignetteOpcode(k [5]float64, cx, cy float64) Opcode {
	return Opcode{ID: 3, Params: appendF64(nil, k[0], k[1], k[2], k[3], k[4], cx, cy)}
}

// WarpOpcode is WarpRectilinear (ID 1) with one coefficient set (kr0..kr3,
// kt0, kt1) per plane, or one for all, about the centre (cx, cy).
func WarpOpcode(planes [][6]float64, cx, cy float64) Opcode {
	b := appendU32(nil, uint32(len(planes)))
	for _, p := range planes {
		b = appendF64(b, p[:]...)
	}
	return Opcode{ID: 1, Params: appendF64(b, cx, cy)}
}

// GainMapArea is the area part of a GainMap: the region (rows Top up to
// Bottom, columns Left up to Right, excluded), planes Plane up to
// Plane+Planes, every RowPitch-th row and ColPitch-th column.
type GainMapArea struct {
	Top, Left, Bottom, Right, Plane, Planes, RowPitch, ColPitch uint32
}

// GainMapOpcode is GainMap (ID 9): a pointsV × pointsH map, mapPlanes
// gains a point (row-major, planes interleaved), point (i, j) at the
// normalised position (originV + i·spacingV, originH + j·spacingH).
func GainMapOpcode(a GainMapArea, pointsV, pointsH int, spacingV, spacingH, originV, originH float64, mapPlanes int, gains []float32) Opcode {
	b := appendU32(nil, a.Top, a.Left, a.Bottom, a.Right, a.Plane, a.Planes, a.RowPitch, a.ColPitch, uint32(pointsV), uint32(pointsH))
	b = appendF64(b, spacingV, spacingH, originV, originH)
	b = appendU32(b, uint32(mapPlanes))
	for _, g := range gains {
		b = binary.BigEndian.AppendUint32(b, math.Float32bits(g))
	}
	return Opcode{ID: 9, Params: b}
}

// The flat fields of the opcode tests: FlatW × FlatH photosites, 16-bit
// (black FlatBlack, white 65535), a neutral grey of FlatLevel (relative to
// white − black) in every channel under AsShotNeutral 1, 1, 1, darkened
// towards the corners; the file's opcode undoes the darkening.
const (
	FlatW, FlatH = 192, 128
	FlatBlack    = 1024
	FlatLevel    = 0.25
)

// FlatVignetteK are the FixVignetteRadial coefficients of FlatVignetted:
// the gain 1 + 0.6 r² + 0.3 r⁴ brightens the corners by 1.9×.
var FlatVignetteK = [5]float64{0.6, 0.3, 0, 0, 0}

// FlatVignetted returns a flat field darkened by 1/g(r), g the
// FixVignetteRadial gain FlatVignetteK about the centre, with that opcode
// in OpcodeList3 (applied after demosaic).
func FlatVignetted() Spec {
	cx, cy := float64(FlatW)/2, float64(FlatH)/2
	m := math.Hypot(cx, cy)
	return flat(func(x, y int) float64 {
		r := math.Hypot(float64(x)+0.5-cx, float64(y)+0.5-cy) / m
		r2 := r * r
		return 1 / (1 + FlatVignetteK[0]*r2 + FlatVignetteK[1]*r2*r2)
	}, OpcodeListTag(tifftag.OpcodeList3, OpcodeList(VignetteOpcode(FlatVignetteK, 0.5, 0.5))))
}

// flatGain is the smooth gain of FlatGainMapped at the normalised
// position (v, h): 1 in the middle, up to 1.5 at the left and right
// edges, a gentle slope from top to bottom.
func flatGain(v, h float64) float64 {
	return 1 + 2*(h-0.5)*(h-0.5) + 0.2*(v-0.5)
}

// FlatGainMapped returns a flat field divided by a smooth gain (flatGain)
// with a GainMap in OpcodeList2 that restores it: four maps of 9 × 13
// points, one per site of the 2×2 Bayer pattern (row and column pitch 2),
// as phone DNGs store their lens shading.
func FlatGainMapped() Spec {
	const pv, ph = 9, 13
	var ops []Opcode
	for site := range 4 {
		top, left := uint32(site/2), uint32(site%2)
		gains := make([]float32, pv*ph)
		for i := range pv {
			for j := range ph {
				gains[i*ph+j] = float32(flatGain(float64(i)/(pv-1), float64(j)/(ph-1)))
			}
		}
		ops = append(ops, GainMapOpcode(GainMapArea{Top: top, Left: left, Bottom: FlatH, Right: FlatW, Planes: 1, RowPitch: 2, ColPitch: 2},
			pv, ph, 1.0/(pv-1), 1.0/(ph-1), 0, 0, 1, gains))
	}
	return flat(func(x, y int) float64 {
		return 1 / flatGain((float64(y)+0.5)/FlatH, (float64(x)+0.5)/FlatW)
	}, OpcodeListTag(tifftag.OpcodeList2, OpcodeList(ops...)))
}

// FlatWithOpcode returns the flat field, undarkened, with list as
// OpcodeList3 (for an opcode rawbatch does not apply).
func FlatWithOpcode(list []byte) Spec {
	return flat(func(int, int) float64 { return 1 }, OpcodeListTag(tifftag.OpcodeList3, list))
}

func flat(shade func(x, y int) float64, tags ...Tag) Spec {
	return Spec{
		Width: FlatW, Height: FlatH, BlackLevel: FlatBlack, WhiteLevel: 65535, Orientation: 1,
		AsShotNeutral: [3]float64{1, 1, 1},
		Scene:         func(x, y, c int) float64 { return FlatLevel * shade(x, y) },
		Tags:          tags,
	}
}

// The distorted grid of the WarpRectilinear test: GridW × GridH
// photosites, dark lines (Gaussian profile, σ GridSigma pixels) every
// GridPitch pixels from GridPitch/2, as the ideal (corrected) picture; the
// stored picture is bent so that WarpRectilinear with the radial
// coefficients GridWarpKr about the centre (in OpcodeList3) straightens
// it again.
const (
	GridW, GridH = 256, 192
	GridPitch    = 32
	GridSigma    = 1.2
)

// GridWarpKr are kr0..kr3 of WarpedGrid's opcode: a source 6 % farther
// out at the corners (barrel distortion corrected).
var GridWarpKr = [4]float64{1, 0.06, 0, 0}

// GridIdeal is the ideal grid's brightness (relative to white) at the
// continuous position (x, y) in pixels (pixel i covers [i, i+1)).
func GridIdeal(x, y float64) float64 {
	line := func(t float64) float64 {
		d := math.Mod(t, GridPitch) - GridPitch/2
		return math.Exp(-d * d / (2 * GridSigma * GridSigma))
	}
	return 0.4 * (1 - 0.8*math.Max(line(x), line(y)))
}

// WarpedGrid returns the stored, distorted grid with its WarpRectilinear
// in OpcodeList3. The stored photosite at q shows the ideal grid at the p
// that the warp maps to q: |q − c| = f(|p − c|)·|p − c|, solved for |p −
// c| by Newton's method.
func WarpedGrid() Spec {
	cx, cy := float64(GridW)/2, float64(GridH)/2
	m := math.Hypot(cx, cy)
	k := GridWarpKr
	s := flat(nil, OpcodeListTag(tifftag.OpcodeList3, OpcodeList(WarpOpcode([][6]float64{{k[0], k[1], k[2], k[3], 0, 0}}, 0.5, 0.5))))
	s.Width, s.Height = GridW, GridH
	s.Scene = func(x, y, c int) float64 {
		qx, qy := float64(x)+0.5-cx, float64(y)+0.5-cy
		sq := math.Hypot(qx, qy) / m
		rho := sq
		for range 20 {
			r2 := rho * rho
			g := rho*(k[0]+r2*(k[1]+r2*(k[2]+r2*k[3]))) - sq
			dg := k[0] + r2*(3*k[1]+r2*(5*k[2]+r2*7*k[3]))
			rho -= g / dg
		}
		scale := 1.0
		if sq > 0 {
			scale = rho / sq
		}
		return GridIdeal(cx+qx*scale, cy+qy*scale)
	}
	return s
}
