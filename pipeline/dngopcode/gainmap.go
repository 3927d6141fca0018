package dngopcode

import (
	"fmt"
	"math"
	"math/bits"

	"github.com/rawbatch/rawbatch/pipeline/internal/par"
)

// GainMapParams are the parameters of a GainMap opcode (ID 9, DNG 1.4
// §6.2.2): a grid of gains over a region of the image, interpolated
// bilinearly, each selected sample multiplied by its gain.
type GainMapParams struct {
	// The region, in pixels of the image the list applies to (rows Top up
	// to Bottom excluded, columns Left up to Right excluded), and the
	// samples in it the map applies to: every RowPitch-th row and
	// ColPitch-th column from Top, Left, planes Plane up to Plane+Planes.
	Top, Left, Bottom, Right uint32
	Plane, Planes            uint32
	RowPitch, ColPitch       uint32
	// PointsV × PointsH map points, MapPlanes gains each; map point (i, j)
	// sits at the normalised image position (OriginV + i·SpacingV,
	// OriginH + j·SpacingH), where 0 is the top (left) edge of the image
	// and 1 its bottom (right) edge.
	PointsV, PointsH   uint32
	SpacingV, SpacingH float64
	OriginV, OriginH   float64
	MapPlanes          uint32
	// Gains are PointsV × PointsH × MapPlanes factors, row-major with the
	// planes interleaved (dimensionless, 1 = no change).
	Gains []float32
}

func parseGainMap(b []byte) (*GainMapParams, error) {
	if len(b) < gainMapFixedParamBytes {
		return nil, fmt.Errorf("%d parameter bytes, want at least %d", len(b), gainMapFixedParamBytes)
	}
	r := &reader{b: b}
	g := &GainMapParams{Top: r.u32(), Left: r.u32(), Bottom: r.u32(), Right: r.u32(),
		Plane: r.u32(), Planes: r.u32(), RowPitch: r.u32(), ColPitch: r.u32(),
		PointsV: r.u32(), PointsH: r.u32(), SpacingV: r.f64(), SpacingH: r.f64(),
		OriginV: r.f64(), OriginH: r.f64(), MapPlanes: r.u32()}
	switch {
	case g.Bottom < g.Top || g.Right < g.Left:
		return nil, fmt.Errorf("region top %d left %d bottom %d right %d", g.Top, g.Left, g.Bottom, g.Right)
	case g.Planes == 0 || g.RowPitch == 0 || g.ColPitch == 0:
		return nil, fmt.Errorf("planes %d, row pitch %d, column pitch %d must be at least 1", g.Planes, g.RowPitch, g.ColPitch)
	case g.PointsV == 0 || g.PointsH == 0 || g.MapPlanes == 0:
		return nil, fmt.Errorf("map of %d×%d points, %d planes", g.PointsV, g.PointsH, g.MapPlanes)
	case !finite(g.SpacingV, g.SpacingH, g.OriginV, g.OriginH):
		return nil, fmt.Errorf("map spacing or origin not finite")
	}
	// One point along an axis: its spacing and origin do not matter.
	if g.PointsV == 1 {
		g.SpacingV, g.OriginV = 1, 0
	}
	if g.PointsH == 1 {
		g.SpacingH, g.OriginH = 1, 0
	}
	if !(g.SpacingV > 0) || !(g.SpacingH > 0) {
		return nil, fmt.Errorf("map spacing %g, %g must be positive", g.SpacingV, g.SpacingH)
	}
	// The points of the map: PointsV·PointsH fits 64 bits, times MapPlanes
	// it may not (a product that wrapped around would let a short list of
	// gains pass for a huge map, and Gain index outside it).
	hi, n := bits.Mul64(uint64(g.PointsV)*uint64(g.PointsH), uint64(g.MapPlanes))
	if have := uint64(len(r.b)) / 4; hi != 0 || n != have || uint64(len(r.b))%4 != 0 {
		return nil, fmt.Errorf("map of %d×%d×%d gains, %d bytes of gains", g.PointsV, g.PointsH, g.MapPlanes, len(r.b))
	}
	g.Gains = make([]float32, n)
	for i := range g.Gains {
		g.Gains[i] = r.f32()
		if math.IsNaN(float64(g.Gains[i])) || math.IsInf(float64(g.Gains[i]), 0) {
			return nil, fmt.Errorf("gain %d not finite", i)
		}
	}
	if r.bad {
		return nil, fmt.Errorf("truncated parameters")
	}
	return g, nil
}

// axis gives the two map indices around normalised position t along an
// axis of n points and the weight of the second, clamping outside the
// map to its edge points (DNG §6.2.2; as Adobe's DNG SDK does).
func axis(t, origin, spacing float64, n uint32) (i0, i1 int, f float32) {
	x := (t - origin) / spacing
	if !(x > 0) {
		return 0, 0, 0
	}
	i := int(math.Min(x, float64(n)))
	if i >= int(n)-1 {
		return int(n) - 1, int(n) - 1, 0
	}
	return i, i + 1, float32(x - float64(i))
}

// Gain returns the gain of map plane mp (clamped to MapPlanes−1) at the
// normalised image position (v, h): 0 top/left edge, 1 bottom/right edge
// of the image.
func (g *GainMapParams) Gain(mp int, v, h float64) float32 {
	mp = min(max(mp, 0), int(g.MapPlanes)-1)
	r0, r1, fr := axis(v, g.OriginV, g.SpacingV, g.PointsV)
	c0, c1, fc := axis(h, g.OriginH, g.SpacingH, g.PointsH)
	at := func(r, c int) float32 { return g.Gains[(r*int(g.PointsH)+c)*int(g.MapPlanes)+mp] }
	top := at(r0, c0)*(1-fc) + at(r0, c1)*fc
	bot := at(r1, c0)*(1-fc) + at(r1, c1)*fc
	return top*(1-fr) + bot*fr
}

// Area places a buffer in the image an opcode list refers to: the
// buffer's pixel (0, 0) is the image's pixel (Top, Left), and the image
// is Width × Height pixels (the normalisation of map and optical-centre
// coordinates). For OpcodeList2 and 3 the image is the buffer itself
// (Top = Left = 0); for OpcodeList1 it is the whole stored raw image and
// the buffer its active area.
type Area struct {
	Top, Left, Width, Height int
}

// span returns the image rows (or columns) lo..hi of the region, every
// pitch-th, that fall in a buffer of n at image offset off, as buffer
// indices: the first, the end (excluded) and the step.
func span(lo, hi, pitch uint32, off, n int) (first, end, step int) {
	first, end, step = int(lo)-off, min(int(hi)-off, n), int(pitch)
	if first < 0 {
		// Skip to the first selected row at or after the buffer's start.
		k := (-first + step - 1) / step
		first += k * step
	}
	return first, end, step
}

// ApplyImage multiplies the samples of img (w×h pixels, c interleaved
// float32 planes, in place) that the opcode selects by the interpolated
// gain, placed in the image by a. Planes beyond c are ignored; map plane
// p−Plane (or the last one) serves plane p. Values are not clipped.
func (g *GainMapParams) ApplyImage(img []float32, w, h, c int, a Area) {
	r0, rEnd, rStep := span(g.Top, g.Bottom, g.RowPitch, a.Top, h)
	c0, cEnd, cStep := span(g.Left, g.Right, g.ColPitch, a.Left, w)
	pEnd := min(int(g.Plane)+int(g.Planes), c)
	if r0 >= rEnd || c0 >= cEnd || int(g.Plane) >= pEnd {
		return
	}
	rows := (rEnd - r0 + rStep - 1) / rStep
	par.Rows(rows, func(lo, hi int) {
		for k := lo; k < hi; k++ {
			y := r0 + k*rStep
			v := (float64(y+a.Top) + 0.5) / float64(a.Height)
			for x := c0; x < cEnd; x += cStep {
				hpos := (float64(x+a.Left) + 0.5) / float64(a.Width)
				for p := int(g.Plane); p < pEnd; p++ {
					img[(y*w+x)*c+p] *= g.Gain(p-int(g.Plane), v, hpos)
				}
			}
		}
	})
}

// ApplyCFA applies the opcode to single-plane CFA data raw (w×h
// photosites, row-major, DN) in place: each selected photosite v becomes
// black + (v − black)·gain, black = blackAt(row, col) in DN (0 for
// OpcodeList1, which applies to the data as read), rounded and clamped to
// 0..65535; photosites at or below black are left alone. Only plane 0
// exists on CFA data: an opcode whose Plane is above 0 changes nothing.
func (g *GainMapParams) ApplyCFA(raw []uint16, w, h int, a Area, blackAt func(row, col int) float64) {
	if g.Plane > 0 {
		return
	}
	r0, rEnd, rStep := span(g.Top, g.Bottom, g.RowPitch, a.Top, h)
	c0, cEnd, cStep := span(g.Left, g.Right, g.ColPitch, a.Left, w)
	if r0 >= rEnd || c0 >= cEnd {
		return
	}
	rows := (rEnd - r0 + rStep - 1) / rStep
	par.Rows(rows, func(lo, hi int) {
		for k := lo; k < hi; k++ {
			y := r0 + k*rStep
			v := (float64(y+a.Top) + 0.5) / float64(a.Height)
			for x := c0; x < cEnd; x += cStep {
				i := y*w + x
				b := blackAt(y, x)
				d := float64(raw[i]) - b
				if d <= 0 {
					continue
				}
				gain := float64(g.Gain(0, v, (float64(x+a.Left)+0.5)/float64(a.Width)))
				raw[i] = uint16(math.Round(min(max(b+d*gain, 0), 65535)))
			}
		}
	})
}
