package warp

import "unsafe"

// Window is a run of rows of a W×H image of 3 channels (float32) that is
// never held whole, such as a streamed conversion's rows, each row held
// planar: Rows[i] is row Lo+i as its three channels one after the other
// (red, green, blue: W floats each; Deinterleave3 makes one from an
// interleaved row), for the rows Lo to Lo+len(Rows)−1, which may lie in
// different buffers. Planar rows let the vector path read a channel's
// taps as they lie, without picking them out of the interleaved values.
type Window struct {
	W, H int
	Lo   int
	Rows [][]float32
}

// Deinterleave3 writes the interleaved row src (W×3 float32: R, G, B of
// each pixel) to dst planar (W reds, then W greens, then W blues), as a
// Window holds its rows; len(dst) ≥ len(src).
func Deinterleave3(dst, src []float32) {
	w := len(src) / 3
	r, g, b := dst[:w], dst[w:2*w], dst[2*w:3*w]
	x := vecDeinterleave3(r, g, b, src[:3*w])
	for ; x < w; x++ {
		p := src[3*x : 3*x+3 : 3*x+3]
		r[x], g[x], b[x] = p[0], p[1], p[2]
	}
}

// SampleRow3 fills row (dw×3, interleaved) with the window's image
// sampled at the positions of the three channels (sx, sy: channel ch's dw
// positions at ch·dw, in pixels of the whole image, centres at integers),
// with the kernel and border rule of the package documentation and, for
// taps inside the window, in the same order of operations as RemapInto
// on the whole image (so the values are the same). A tap on a row of the
// image outside the window takes the window's nearest row: the caller
// holds every row its positions reach (±2 rows of the kernel).
func (win Window) SampleRow3(sx, sy, row []float32) { win.SampleRow3Buf(sx, sy, row, nil) }

// RowBuf is SampleRow3Buf's scratch, reused from row to row: the
// channels' samples planar and the groups the vector path leaves.
type RowBuf struct {
	planar []float32
	skip   []int32
	ptrs   []unsafe.Pointer
}

// rowPointers sets buf.ptrs to the first value of each of the window's
// rows and, once more, of its last (the vector path points at a group's
// four or five rows from one slice of them) and returns them; nil when a
// row is shorter than three channels of W (then no group takes the
// vector path).
func (win Window) rowPointers(buf *RowBuf) []unsafe.Pointer {
	if len(win.Rows) == 0 {
		return nil
	}
	p := buf.ptrs[:0]
	for _, r := range win.Rows {
		if len(r) < 3*win.W || len(r) == 0 {
			return nil
		}
		p = append(p, unsafe.Pointer(unsafe.SliceData(r)))
	}
	p = append(p, p[len(p)-1])
	buf.ptrs = p
	return p
}

// SampleRow3Buf is SampleRow3 with its scratch in buf (nil: its own).
// Each channel's whole groups of eight pixels are sampled into planar
// values, by the vector path where it takes them (vecSampleRun) and by
// the scalar path where not, then interleaved into row; the last pixels
// (dw mod 8) go straight to row by the scalar path.
func (win Window) SampleRow3Buf(sx, sy, row []float32, buf *RowBuf) {
	if buf == nil {
		buf = &RowBuf{}
	}
	dw := len(row) / 3
	n := dw / 8
	if cap(buf.planar) < 24*n {
		buf.planar = make([]float32, 24*n)
	}
	if cap(buf.skip) < n {
		buf.skip = make([]int32, 0, n)
	}
	planar := buf.planar[:24*n]
	var ptrs []unsafe.Pointer
	if vec && n > 0 {
		ptrs = win.rowPointers(buf)
	}
	for ch := 0; ch < 3; ch++ {
		csx, csy := sx[ch*dw:(ch+1)*dw], sy[ch*dw:(ch+1)*dw]
		dst := planar[8*n*ch : 8*n*(ch+1)]
		buf.skip = vecSampleRun(&win, ptrs, ch, csx, csy, dst, buf.skip[:0])
		for _, g := range buf.skip {
			x := 8 * int(g)
			win.sampleRun(ch, csx[x:x+8], csy[x:x+8], dst[x:x+8], 1)
		}
		if x0 := 8 * n; x0 < dw {
			win.sampleRun(ch, csx[x0:], csy[x0:], row[3*x0+ch:], 3)
		}
	}
	interleave3(planar[:8*n], planar[8*n:16*n], planar[16*n:], row[:24*n])
}

// interleave3 writes the planar pixels r, g, b to dst interleaved (R, G,
// B of each pixel in turn).
func interleave3(r, g, b, dst []float32) {
	x := vecInterleave3(r, g, b, dst)
	g, b = g[:len(r)], b[:len(r)]
	for ; x < len(r); x++ {
		p := dst[3*x : 3*x+3 : 3*x+3]
		p[0], p[1], p[2] = r[x], g[x], b[x]
	}
}

// sampleRun is SampleRow3's scalar path: channel ch of the pixels whose
// positions are sx, sy, pixel i's into out[stride·i].
func (win Window) sampleRun(ch int, sx, sy, out []float32, stride int) {
	w, h := win.W, win.H
	xMax, yMax := float32(w-2), float32(h-2)
	lo, hi := win.Lo, win.Lo+len(win.Rows)
	plane := ch * w
	sy = sy[:len(sx)]
	for x, px := range sx {
		py := sy[x]
		if !(px >= 1 && py >= 1 && px < xMax && py < yMax) || int(py)-1 < lo || int(py)+2 >= hi {
			out[stride*x] = win.sample(ch, px, py)
			continue
		}
		ix, iy := int(px), int(py)
		fx, fy := px-float32(ix), py-float32(iy)
		wx0, wx1, wx2, wx3 := keys4(fx)
		wy0, wy1, wy2, wy3 := keys4(fy)
		c := plane + ix - 1
		rows := win.Rows[iy-1-lo : iy+3-lo : iy+3-lo]
		r := rows[0][c : c+4]
		v0 := wx0*r[0] + wx1*r[1] + wx2*r[2] + wx3*r[3]
		r = rows[1][c : c+4]
		v1 := wx0*r[0] + wx1*r[1] + wx2*r[2] + wx3*r[3]
		r = rows[2][c : c+4]
		v2 := wx0*r[0] + wx1*r[1] + wx2*r[2] + wx3*r[3]
		r = rows[3][c : c+4]
		v3 := wx0*r[0] + wx1*r[1] + wx2*r[2] + wx3*r[3]
		out[stride*x] = wy0*v0 + wy1*v1 + wy2*v2 + wy3*v3
	}
}

// sample is the package's sample on the window: the border path, its
// rows clamped to the image and then to the window.
func (win Window) sample(ch int, x, y float32) float32 {
	return borderSample(win.W, win.H, 1, 0, x, y, func(i int) []float32 {
		r := win.Rows[min(max(i-win.Lo, 0), len(win.Rows)-1)]
		return r[ch*win.W : (ch+1)*win.W]
	})
}
