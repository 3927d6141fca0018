package denoise

import (
	"fmt"
	"math"
	"sync"

	"github.com/rawbatch/rawbatch/pipeline/internal/par"
	"github.com/rawbatch/rawbatch/pipeline/internal/thp"
)

// The noise reduction as the conversion runs it (docs/denoise.md
// "Streaming"): the image comes row by row, top to bottom, as a streamed
// conversion makes it, and is never held whole. The smoothings c_{j+1} =
// B3_j ∗ c_j of the à trous cascade depend on the input alone, not on any
// threshold, so the noise of every level can be measured in one pass over
// the rows (NoiseMeter), and the image denoised in a second pass with the
// thresholds known (Denoiser). Both keep each level's smooth rows in a
// ring of their own (the rows above the caller's first are gone). The
// tests' whole-image reference, Wavelet, computes every row with the same
// row functions in the same order: the two give its Noise and pixels
// exactly.

// NoiseLevels is the noise σ_j at each level j of the three planes
// (stabilised luminance at full resolution, the two colour differences at
// half resolution), from the input alone: the MAD estimate (madSigma) on
// a regular grid (sampleEvery) of the plane's level-j detail c_j − c_{j+1}
// (sampleRow). NoiseMeter measures it row by row; Denoiser shrinks with
// the thresholds it gives.
type NoiseLevels struct {
	Luma   [LumaLevels]float64
	Chroma [2][ChromaLevels - 1]float64
}

// Noise is the finest levels' noise.
func (l NoiseLevels) Noise() Noise {
	return Noise{Luma: l.Luma[0], Chroma1: l.Chroma[0][0], Chroma2: l.Chroma[1][0]}
}

// Turn says how the rows given to NoiseMeter and Denoiser are turned from
// the image their grids are laid on (a streamed conversion's upright rows,
// the grids being laid on the sensor's image, from its first row and
// column): RevX, RevY, its upright x or y axis runs the other way along
// the axis of that image it comes from (a transposition needs nothing
// else: the grids are the same along both axes). The noise's sample grid
// and the colour planes' 2×2 grid are then laid where they lie on that
// image, so the same photosites are sampled (demosaicked noise differs
// from one CFA site to the next) and the same pixels averaged. The zero
// Turn: the rows are that image's own.
type Turn struct{ RevX, RevY bool }

// TurnOf is the Turn of rows made upright by a LibRaw flip code (bit 2:
// rows and columns swapped, then bit 1 mirrored vertically and bit 0
// horizontally, as pipeline's orientation reads an image).
func TurnOf(flip int) Turn {
	if flip&4 != 0 {
		return Turn{RevX: flip&2 != 0, RevY: flip&1 != 0}
	}
	return Turn{RevX: flip&1 != 0, RevY: flip&2 != 0}
}

// phases are the colour grid's phases along x and y for a w×h image
// (splitRow's px): 1 along a reversed axis of odd size.
func (t Turn) phases(w, h int) (px, py int) {
	if t.RevX && w%2 == 1 {
		px = 1
	}
	if t.RevY && h%2 == 1 {
		py = 1
	}
	return px, py
}

// StreamLookahead is how many rows below the last row a call of
// Denoiser.Rows finishes it reads: the luminance's support, 2·(1+2+4+8)
// = 30 rows, is exceeded by the colour planes': 30 half-resolution rows
// (60 full rows) below the half row that the last full row interpolates
// from, and the two full rows of each half row.
const StreamLookahead = 2*(1<<(ChromaLevels-1)-1)*2 + 2

// streamChunk is how many full rows Denoiser and NoiseMeter work on at a
// time (each level's rows in parallel), whatever the caller's bands: it
// bounds their rings.
const streamChunk = 32

// mergeBlock is how many rows of a chunk Denoiser's merge gives a
// goroutine at a time.
const mergeBlock = 16

// cascade is the à trous cascade of one plane (w×h) given row by row:
// ring[j] holds the recent rows of c_j (row y at (y mod rows)·w), made[j]
// of them are done (c_0's are written by the caller).
type cascade struct {
	w, h, rows int
	ring       [][]float32
	made       []int
	// keep[j] is the first row of c_j still needed (set by the owner
	// before rows are made; checked against the ring's size).
	keep []int
	// need[j], when not nil, marks the rows of c_j that are read (the
	// others are not made: NoiseMeter's coarse levels are read only
	// around its sample grid's rows); nil: every row.
	need [][]bool
	// tmp holds four rows of w float32 for the goroutines' vertical
	// passes (blur4), reused from call to call (no garbage per band: the
	// collector would let it pile up to the worker's memory limit).
	tmp sync.Pool
	// rings holds guard rings (guardRing) of w columns, reused alike.
	rings sync.Pool
	// order is advance's order of the rows it makes (rowOrder).
	order []int
}

// newCascade returns a cascade of levels smooth images c_0..c_{levels−1}
// of a w×h plane, each in a ring of rows rows, the rings cut from the
// front of *slab (which must hold cascadeFloats of them).
func newCascade(w, h, levels, rows int, slab *[]float32) *cascade {
	c := &cascade{w: w, h: h, rows: min(rows, h), made: make([]int, levels), keep: make([]int, levels)}
	n := c.rows * w
	for range levels {
		c.ring = append(c.ring, (*slab)[:n:n])
		*slab = (*slab)[n:]
	}
	c.tmp.New = func() any { return make([]float32, 4*w) }
	c.rings.New = func() any { return newGuardRing(w) }
	return c
}

// cascadeFloats is the size of newCascade's rings.
func cascadeFloats(w, h, levels, rows int) int { return levels * min(rows, h) * w }

// row returns row y of c_j.
func (c *cascade) row(j, y int) []float32 {
	i := y % c.rows * c.w
	return c.ring[j][i : i+c.w : i+c.w]
}

// taps returns the five rows of c_j that row y of c_{j+1} reads.
func (c *cascade) taps(j, y int) [5][]float32 {
	step := 1 << j
	var r [5][]float32
	for i := range r {
		r[i] = c.row(j, mirror(y+(i-2)*step, c.h))
	}
	return r
}

// ready is how many rows of c_{j+1} the rows made of c_j let be made.
func (c *cascade) ready(j int) int {
	if c.made[j] >= c.h {
		return c.h
	}
	return max(0, c.made[j]-2<<j)
}

// advance makes the rows of c_1..c_{levels−1} that the rows made of the
// level before allow, as far as each ring holds them (from keep on), each
// level's in parallel; it reports whether it made any.
func (c *cascade) advance() bool {
	progress := false
	for j := 0; j+1 < len(c.made); j++ {
		y0, y1 := c.made[j+1], min(c.ready(j), c.keep[j+1]+c.rows)
		if y1 <= y0 {
			continue
		}
		var need []bool
		if c.need != nil {
			need = c.need[j+1]
		}
		order := c.rowOrder(y0, y1, 1<<j)
		par.Rows(len(order), func(lo, hi int) {
			tmp := c.tmp.Get().([]float32)
			for i := lo; i < hi; {
				y := order[i]
				if need != nil && !need[y] {
					i++
					continue
				}
				if c.slides(j, y, order[i:hi], need) {
					c.blur4(j, y, tmp)
					i += 4
					continue
				}
				blurRows(c.taps(j, y), 1, c.w, 1<<j, tmp[:c.w], c.row(j+1, y))
				i++
			}
			c.tmp.Put(tmp)
		})
		c.made[j+1] = y1
		progress = true
	}
	return progress
}

// rowOrder returns rows y0 to y1−1 in the order advance makes them at
// hole spacing step: by their remainder modulo step, then upwards, so
// that a goroutine's run of rows holds rows step apart, whose vertical
// passes share rows (blur4).
func (c *cascade) rowOrder(y0, y1, step int) []int {
	c.order = c.order[:0]
	for r := range min(step, y1-y0) {
		for y := y0 + r; y < y1; y += step {
			c.order = append(c.order, y)
		}
	}
	return c.order
}

// slides reports whether the first four rows of ys are y, y+step,
// y+2·step, y+3·step, each to be made (need), with taps inside the plane
// (no mirrored row): blur4 makes them at once.
func (c *cascade) slides(j, y int, ys []int, need []bool) bool {
	step := 1 << j
	if y-2*step < 0 || y+5*step >= c.h || len(ys) < 4 {
		return false
	}
	for k, v := range ys[:4] {
		if v != y+k*step || (need != nil && !need[v]) {
			return false
		}
	}
	return true
}

// blur4 makes rows y, y+step, y+2·step, y+3·step of c_{j+1} (slides),
// with tmp of 4·w floats.
func (c *cascade) blur4(j, y int, tmp []float32) {
	step := 1 << j
	var r [8][]float32
	for i := range r {
		r[i] = c.row(j, y+(i-2)*step)
	}
	var out [4][]float32
	for k := range out {
		out[k] = c.row(j+1, y+k*step)
	}
	blurRows4(r, c.w, step, tmp, out)
}

// check panics if making the rows of c_j up to y1−1 would overwrite one
// still needed (a ring too small: a bug, not bad input).
func (c *cascade) check(j, y1 int) {
	if y1-c.keep[j] > c.rows {
		panic(fmt.Sprintf("denoise: level %d ring of %d rows cannot hold rows %d to %d", j, c.rows, c.keep[j], y1-1))
	}
}

// ingest is the input side of NoiseMeter and Denoiser: it splits the
// input's rows (splitRow) into the luminance's c_0 (full rows) and the
// colour planes' (half rows, each complete once its two full rows are
// in).
type ingest struct {
	w, h, hw, hh int
	px, py       int // the colour grid's phases (Turn.phases)
	luma, c1, c2 *cascade
	next         int // the first full row not split yet
	// coded, when set, stabilises the rows' values through the table of
	// 16-bit codes' (pass 2's stored rows; any other value computed).
	coded *codeStab
}

// rows splits full rows in.next to y1−1 (row(y) the input row, 3·w).
func (in *ingest) rows(y1 int, row func(y int) []float32) {
	y0 := in.next
	if y1 <= y0 {
		return
	}
	in.luma.check(0, y1)
	py := in.py
	r0, r1 := (y0+py)/2, (y1-1+py)/2+1
	in.c1.check(0, r1)
	in.c2.check(0, r1)
	// In parallel over the half rows touched, each one's full rows added
	// in order onto zeros (splitRow).
	par.Rows(r1-r0, func(lo, hi int) {
		for r := r0 + lo; r < r0+hi; r++ {
			q1r, q2r := in.c1.row(0, r), in.c2.row(0, r)
			a, b := max(0, 2*r-py), min(2*r+1-py, in.h-1)
			if a >= y0 {
				clear(q1r)
				clear(q2r)
				splitRow(row(a), in.luma.row(0, a), q1r, q2r, in.px, in.coded)
			}
			if b < y1 && (b != a || a >= y0) {
				splitRow(row(b), in.luma.row(0, b), q1r, q2r, in.px, in.coded)
			}
		}
	})
	in.next = y1
	in.luma.made[0] = y1
	half := (y1 + py) / 2
	if y1 >= in.h {
		half = in.hh
	}
	in.c1.made[0], in.c2.made[0] = half, half
}

// newIngest returns the ingest of a w×h image turned by t, its planes'
// cascades of the given levels and ring rows, and extra(hw, hh) floats
// more (hw×hh the colour planes' size). The rings and the extra floats
// are cut from one allocation advised for huge pages (thp): a level's
// ring alone (0.7 to 2.7 MB at 24 MP) holds few whole ones.
func newIngest(w, h int, t Turn, lumaLevels, lumaRows, chromaLevels, chromaRows int, extra func(hw, hh int) int) (*ingest, []float32) {
	px, py := t.phases(w, h)
	hw, hh := (w+px+1)/2, (h+py+1)/2
	slab := thp.Floats(cascadeFloats(w, h, lumaLevels, lumaRows) + 2*cascadeFloats(hw, hh, chromaLevels, chromaRows) + extra(hw, hh))
	in := &ingest{w: w, h: h, hw: hw, hh: hh, px: px, py: py, luma: newCascade(w, h, lumaLevels, lumaRows, &slab),
		c1: newCascade(hw, hh, chromaLevels, chromaRows, &slab), c2: newCascade(hw, hh, chromaLevels, chromaRows, &slab)}
	return in, slab
}

// planes returns the three cascades: luminance, colour differences.
func (in *ingest) planes() [3]*cascade { return [3]*cascade{in.luma, in.c1, in.c2} }

// NoiseMeter measures, row by row, the noise of every level of the image
// (NoiseLevels): Rows reads each row once (lookahead 0, no row changed,
// the rows above its first not read again); once every row has been read,
// Levels gives σ of every level, exactly as measured on the whole image
// (TestNoiseMeterMatchesWavelet).
// Memory: each level's smooth rows over its support and a chunk of rows
// (MeterScratchBytes: 66 rows of 4 bytes a pixel per level of the
// luminance, 50 half rows per level of each colour plane), and the
// samples (at most 16384 per level and plane). Of the levels above the
// first it makes only the rows its samples read (neededRows).
type NoiseMeter struct {
	in *ingest
	// xs, ys: per plane, the grid's columns and rows; sampled: per plane
	// and level, how many of its rows are sampled; samples: the
	// coefficients so far.
	xs, ys  [3][]int
	sampled [3][]int
	samples [3][][]float32
}

// NewNoiseMeter returns the meter of a w×h image (w, h > 0) turned by t
// from the image whose noise it measures.
func NewNoiseMeter(w, h int, t Turn) *NoiseMeter {
	lr, cr := meterRows()
	in, _ := newIngest(w, h, t, LumaLevels, lr, ChromaLevels-1, cr, func(int, int) int { return 0 })
	m := &NoiseMeter{in: in}
	for p, c := range m.in.planes() {
		every := sampleEvery(c.w, c.h)
		m.xs[p], m.ys[p] = sampleAt(c.w, every, t.RevX), sampleAt(c.h, every, t.RevY)
		n := len(c.made)
		m.sampled[p] = make([]int, n)
		m.samples[p] = make([][]float32, n)
		for j := range n {
			m.samples[p][j] = make([]float32, 0, len(m.xs[p])*len(m.ys[p]))
		}
		c.need = neededRows(c.h, n, m.ys[p])
	}
	return m
}

// neededRows marks, for each level j ≥ 1 of levels smooth images of a
// plane of h rows sampled at rows ys, the rows of c_j that are read: the
// taps of level j's samples and of the rows of c_{j+1} that are read
// themselves (level 0's rows are all made anyway). The rows left out are
// never read, so the noise is the same.
func neededRows(h, levels int, ys []int) [][]bool {
	need := make([][]bool, levels)
	for j := levels - 1; j >= 1; j-- {
		need[j] = make([]bool, h)
		mark := func(y int) {
			for i := range 5 {
				need[j][mirror(y+(i-2)<<j, h)] = true
			}
		}
		for _, y := range ys {
			mark(y)
		}
		if j+1 < levels {
			for y, n := range need[j+1] {
				if n {
					mark(y)
				}
			}
		}
	}
	return need
}

// meterRows is the size of NoiseMeter's rings of full and half rows: a
// chunk and, for the coarsest level, its samples' reach (2·step rows)
// above the rows it smooths, and the same below.
func meterRows() (luma, chroma int) {
	return streamChunk + 4<<(LumaLevels-1) + 2, streamChunk/2 + 4<<(ChromaLevels-2) + 2
}

// Next is the first row not read yet.
func (m *NoiseMeter) Next() int { return m.in.next }

// Rows reads rows Next() to y1−1 (row(y) returns row y, 3·w float32,
// linear RGB, 1 = white), in chunks.
func (m *NoiseMeter) Rows(y1 int, row func(y int) []float32) {
	y1 = min(y1, m.in.h)
	for m.in.next < y1 {
		y := min(y1, m.in.next+streamChunk)
		for p, c := range m.in.planes() {
			m.setKeep(p, c)
		}
		m.in.rows(y, row)
		for p, c := range m.in.planes() {
			for {
				m.setKeep(p, c)
				made := c.advance()
				if !m.sample(p, c) && !made {
					break
				}
			}
		}
	}
}

// setKeep marks the rows of each level still needed: those the next
// level's smoothing and the level's next grid row read.
func (m *NoiseMeter) setKeep(p int, c *cascade) {
	for j := range c.made {
		k := c.h
		if i := m.sampled[p][j]; i < len(m.ys[p]) {
			k = m.ys[p][i]
		}
		k -= 2 << j
		if j+1 < len(c.made) {
			k = min(k, c.made[j+1]-2<<j)
		}
		c.keep[j] = max(0, k)
	}
}

// sample takes the grid rows of plane p whose taps are made; it reports
// whether it took any.
func (m *NoiseMeter) sample(p int, c *cascade) bool {
	took := false
	ys := m.ys[p]
	for j := range c.made {
		for i := m.sampled[p][j]; i < len(ys) && (c.made[j] >= c.h || ys[i]+2<<j < c.made[j]); i++ {
			m.samples[p][j] = sampleRow(m.samples[p][j], c.taps(j, ys[i]), 1, c.w, 1<<j, m.xs[p])
			m.sampled[p][j] = i + 1
			took = true
		}
	}
	return took
}

// Levels returns the noise of every level once every row has been read;
// ok false before.
func (m *NoiseMeter) Levels() (l NoiseLevels, ok bool) {
	if m.in.next < m.in.h {
		return l, false
	}
	for j := range l.Luma {
		l.Luma[j] = madSigma(m.samples[0][j])
	}
	for p := range l.Chroma {
		for j := range l.Chroma[p] {
			l.Chroma[p][j] = madSigma(m.samples[p+1][j])
		}
	}
	return l, true
}

// MeterScratchBytes is what NoiseMeter holds for an image w pixels wide:
// its rings (the samples, at most 3·4·16384 float32, aside).
func MeterScratchBytes(w int) int64 {
	lr, cr := meterRows()
	return 4*int64(w)*int64(LumaLevels*lr) + 8*int64((w+1)/2)*int64((ChromaLevels-1)*cr)
}

// Denoiser is the noise reduction of an image given row by row, top to
// bottom, with the noise measured beforehand (NoiseMeter): Rows finishes
// the next rows in place, reading rows up to Lookahead below the last one,
// and keeps in rings of its own the smooth rows of every level that later
// rows need. The result is the same for any split of the image into calls
// of Rows, and the same as on the whole image at once
// (TestDenoiserMatchesWavelet). Memory: StreamScratchBytes.
type Denoiser struct {
	in  *ingest
	t   [3][]float32 // squared thresholds per plane and level
	off bool
	// cout holds the shrunk colour planes' half rows (cmade of them
	// done), out the next full row to finish.
	cout  [2][]float32
	crows int
	cmade int
	out   int
	cols  mergeCols
}

// NewDenoiser returns the Denoiser of a w×h image (w, h > 0), turned by t
// (Turn), with the given strength (0 or less: Rows leaves the rows as they
// are; 1: the thresholds LumaK and ChromaK times the measured noise;
// larger smooths more) and noise levels l.
func NewDenoiser(w, h int, strength float64, l NoiseLevels, t Turn) *Denoiser {
	lr, cr := denoiserRows()
	// The shrunk colour half rows' ring from the rings' allocation.
	in, cout := newIngest(w, h, t, LumaLevels+1, lr, ChromaLevels, cr, func(hw, hh int) int { return 2 * min(cr, hh) * hw })
	d := &Denoiser{in: in, off: strength <= 0}
	// A streamed conversion gives the Denoiser rows of 16-bit codes.
	d.in.coded = stabCodes()
	d.t[0] = thresholds(l.Luma[:], LumaK*strength)
	d.t[1] = thresholds(l.Chroma[0][:], ChromaK*strength)
	d.t[2] = thresholds(l.Chroma[1][:], ChromaK*strength)
	d.crows = min(cr, d.in.hh)
	n := d.crows * d.in.hw
	d.cout = [2][]float32{cout[:n:n], cout[n : 2*n : 2*n]}
	d.cols = mergeColumns(w, d.in.hw, d.in.px)
	return d
}

// thresholds are the levels' squared thresholds (levelThreshold) for
// measured sigmas, k the strength times LumaK or ChromaK.
func thresholds(sigmas []float64, k float64) []float32 {
	t := make([]float32, len(sigmas))
	for j, s := range sigmas {
		t[j] = levelThreshold(j, s, sigmas[0], k)
	}
	return t
}

// denoiserRows is the size of Denoiser's rings of full and half rows: a
// chunk, the lookahead and the rows above the chunk still read.
func denoiserRows() (luma, chroma int) {
	return streamChunk + StreamLookahead + 2<<(LumaLevels-1) + 2, streamChunk/2 + StreamLookahead/2 + 2<<(ChromaLevels-2) + 4
}

// Lookahead is how many rows below the last row it finishes a call of
// Rows reads (StreamLookahead).
func (d *Denoiser) Lookahead() int { return StreamLookahead }

// Next is the first row not finished yet.
func (d *Denoiser) Next() int { return d.out }

// Rows finishes rows Next() to y1−1 in place. row(y) returns row y (3·w
// float32) for every y from Next() to min(h, y1+Lookahead())−1, not yet
// denoised; rows above Next() are not read again.
func (d *Denoiser) Rows(y1 int, row func(y int) []float32) {
	in := d.in
	y1 = min(y1, in.h)
	if d.off {
		d.out = max(d.out, y1)
		return
	}
	for d.out < y1 {
		y := min(y1, d.out+streamChunk)
		// The rows above the chunk its merge and the smoothings still
		// read: from the row above the first one to finish (the guard of
		// the finest level reads it).
		for p, c := range in.planes() {
			first := d.out - 1
			if p > 0 {
				first = d.cmade - 1
			}
			for j := range c.made {
				k := first
				if j+1 < len(c.made) {
					k = min(k, c.made[j+1]-2<<j)
				}
				c.keep[j] = max(0, k)
			}
		}
		in.rows(min(in.h, y+StreamLookahead), row)
		for _, c := range in.planes() {
			c.advance()
		}
		// The shrunk colour half rows the chunk's merge reads.
		a0, _, _ := mergeRows(d.out, in.hh, in.py)
		_, a1, _ := mergeRows(y-1, in.hh, in.py)
		d.shrinkChroma(a1+1, a0)
		d.merge(d.out, y, row)
		d.out = y
	}
}

// shrinkChroma makes the shrunk colour half rows up to r1−1 (keeping
// those from keep on).
func (d *Denoiser) shrinkChroma(r1, keep int) {
	r0 := d.cmade
	if r1 <= r0 {
		return
	}
	if r1-keep > d.crows {
		panic(fmt.Sprintf("denoise: colour ring of %d rows cannot hold rows %d to %d", d.crows, keep, r1-1))
	}
	c1, c2 := d.in.c1, d.in.c2
	L := len(c1.made) - 1
	if c1.made[L] < r1 || c2.made[L] < r1 {
		panic(fmt.Sprintf("denoise: colour rows up to %d needed, %d made", r1-1, min(c1.made[L], c2.made[L])))
	}
	hw := d.in.hw
	par.Rows(r1-r0, func(lo, hi int) {
		g1, g2 := c1.guardRing(), c2.guardRing()
		defer c1.putRing(g1)
		defer c2.putRing(g2)
		for r := r0 + lo; r < r0+hi; r++ {
			i := r % d.crows * hw
			sumDetails(c1, r, d.t[1], d.cout[0][i:i+hw], g1)
			sumDetails(c2, r, d.t[2], d.cout[1][i:i+hw], g2)
		}
	})
	d.cmade = r1
}

// sumDetails writes into out row y of the shrunk plane of cascade c: the
// details c_j − c_{j+1} of its levels shrunk with squared thresholds
// t2[j] (garrote), added from the finest, plus the last smooth image; the
// finest level's detail guarded (guardKeys, from the shrunk detail of
// rows y−1 to y+1, whose keys g holds or makes: called for consecutive
// rows, each row's are made once).
func sumDetails(c *cascade, y int, t2 []float32, out []float32, g *guardRing) {
	L := len(c.made) - 1
	d0 := out[:c.w]
	g.guard(y, c.h, func(r int, p, n []uint32) { garroteKeys(c.row(0, r), c.row(1, r), t2[0], p, n) },
		d0, guardMargin*float32(math.Sqrt(float64(t2[0]))))
	if L == 4 {
		c1, c2, c3, c4 := c.row(1, y), c.row(2, y), c.row(3, y), c.row(4, y)
		c2, c3, c4, d0 = c2[:len(c1)], c3[:len(c1)], c4[:len(c1)], d0[:len(c1)]
		t1, t2v, t3 := t2[1], t2[2], t2[3]
		v := vecSum4(d0, c1, c2, c3, c4, t1, t2v, t3)
		c1, c2, c3, c4, d0 = c1[v:], c2[v:], c3[v:], c4[v:], d0[v:]
		for x, b := range c1 {
			v := d0[x] + garrote(b-c2[x], t1)
			v += garrote(c2[x]-c3[x], t2v)
			v = v + garrote(c3[x]-c4[x], t3)
			d0[x] = v + c4[x]
		}
		return
	}
	rows := make([][]float32, L+1)
	for j := range rows {
		rows[j] = c.row(j, y)
	}
	for x := range d0 {
		v := d0[x]
		for j := 1; j < L; j++ {
			v += garrote(rows[j][x]-rows[j+1][x], t2[j])
		}
		d0[x] = v + rows[L][x]
	}
}

// garroteKeys writes the keys (signKeys) of the finest level's shrunk
// detail of a row, c0 − c1 (the row of c_0 and of c_1) shrunk with
// squared threshold t2, into p and n.
func garroteKeys(c0, c1 []float32, t2 float32, p, n []uint32) {
	v := vecGarroteKeys(c0, c1, t2, p, n)
	c0, c1, p, n = c0[v:], c1[v:len(c0)], p[v:len(c0)], n[v:len(c0)]
	for x, a := range c0 {
		p[x], n[x] = signKeys(garrote(a-c1[x], t2))
	}
}

// guardRing takes a guard ring of c.w from c's pool, reset (putRing gives
// it back).
func (c *cascade) guardRing() *guardRing {
	g := c.rings.Get().(*guardRing)
	g.reset()
	return g
}

func (c *cascade) putRing(g *guardRing) { c.rings.Put(g) }

// merge finishes full rows y0 to y1−1: the shrunk luminance (made here,
// row by row) and the shrunk colour half rows, put back together
// (mergeRow).
func (d *Denoiser) merge(y0, y1 int, row func(y int) []float32) {
	in := d.in
	L := len(in.luma.made) - 1
	if in.luma.made[L] < y1 {
		panic(fmt.Sprintf("denoise: luminance rows up to %d needed, %d made", y1-1, in.luma.made[L]))
	}
	hw := in.hw
	// Bands of mergeBlock rows: each band makes the guard's keys of two
	// rows more than it finishes.
	par.Range(y1-y0, mergeBlock, func(lo, hi int) {
		buf := in.luma.tmp.Get().([]float32)
		defer in.luma.tmp.Put(buf)
		yr := buf[:in.w]
		g := in.luma.guardRing()
		defer in.luma.putRing(g)
		for r := y0 + lo; r < y0+hi; r++ {
			sumDetails(in.luma, r, d.t[0], yr, g)
			a0, a1, ty := mergeRows(r, in.hh, in.py)
			i0, i1 := a0%d.crows*hw, a1%d.crows*hw
			mergeRow(yr, d.cout[0][i0:i0+hw], d.cout[0][i1:i1+hw], d.cout[1][i0:i0+hw], d.cout[1][i1:i1+hw], d.cols, ty, row(r))
		}
	})
}

// StreamScratchBytes is what a Denoiser holds for an image w pixels wide:
// its rings of every level's smooth rows (4 bytes a pixel) and of the
// shrunk colour half rows.
func StreamScratchBytes(w int) int64 {
	lr, cr := denoiserRows()
	hw := int64((w + 1) / 2)
	return 4*int64(w)*int64((LumaLevels+1)*lr) + 8*hw*int64(ChromaLevels*cr) + 8*hw*int64(cr)
}
