package warp

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
func (win Window) SampleRow3(sx, sy, row []float32) {
	dw := len(row) / 3
	// Whole groups of eight pixels by the vector path where it takes
	// them (vecSampleGroups), a chunk of groups at a time into planar
	// values, the channels of groups it leaves (flags) by the scalar
	// path, then the chunk interleaved into row; the last pixels by the
	// scalar path.
	const chunk = 64
	var flags [chunk]uint8
	var planar [3 * 8 * chunk]float32
	full := dw / 8
	for g0 := 0; g0 < full; g0 += chunk {
		n := min(chunk, full-g0)
		fl, buf := flags[:n], planar[:3*8*n]
		if !vecSampleGroups(&win, sx, sy, buf, dw, g0, fl) {
			for i := range fl {
				fl[i] = 7
			}
		}
		for i, f := range fl {
			for ch := range 3 {
				if f&(1<<ch) != 0 {
					c := ch*dw + 8*(g0+i)
					win.sampleRun(ch, sx[c:c+8], sy[c:c+8], buf[8*(ch*n+i):], 1)
				}
			}
		}
		interleave3(buf[:8*n], buf[8*n:16*n], buf[16*n:], row[24*g0:24*(g0+n)])
	}
	for ch := range 3 {
		if x0 := 8 * full; x0 < dw {
			win.sampleRun(ch, sx[ch*dw+x0:(ch+1)*dw], sy[ch*dw+x0:(ch+1)*dw], row[3*x0+ch:], 3)
		}
	}
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
