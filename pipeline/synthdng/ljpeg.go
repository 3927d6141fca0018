package synthdng

import (
	"container/heap"
	"sort"
)

// ljpegEncode encodes a lossless JPEG (ITU T.81 process 14: SOF3, one
// scan, point transform 0) of w×h samples with ncomp interleaved
// components of the given precision (2..16 bits), with predictor 1 and one
// Huffman table: ljpegEncodeWith(bits, w, h, ncomp, 1, false, sample).
//
// DNG (Compression 7) tiles use ncomp 2 (two CFA sites of a row per
// sample, so a JPEG row is a tile row); Sony's lossless ARW uses ncomp 4
// (a 2×2 Bayer block per sample).
func ljpegEncode(bits, w, h, ncomp int, sample func(jx, jy, c int) int) []byte {
	return ljpegEncodeWith(bits, w, h, ncomp, 1, false, sample)
}

// ljpegEncodeWith is ljpegEncode with predictor psv (1..7, T.81 Table
// H.1) and, when perComp, a Huffman table of its own for each component
// (class 0, id c, at most 4), else one (id 0) that every component shares.
// sample(jx, jy, c) is component c of sample (jx, jy), in 0..2^bits−1. The
// first row is predicted from the left, the first sample of each row from
// the first of the row above, the very first from 2^(bits−1) (T.81
// H.1.1). Each table is built for the differences of this image (T.81
// K.2: optimal code lengths limited to 16 bits), as cameras and Adobe's
// DNG converter write them, so the decoder sees realistic code lengths.
func ljpegEncodeWith(bits, w, h, ncomp, psv int, perComp bool, sample func(jx, jy, c int) int) []byte {
	// Pass 1: the differences' categories, kept for pass 2.
	n := w * h * ncomp
	vals := make([]int32, n)
	ntab := 1
	if perComp {
		ntab = ncomp
	}
	freq := make([][17]int, ntab)
	i := 0
	prev, cur := make([]int, w*ncomp), make([]int, w*ncomp)
	for jy := range h {
		for jx := range w {
			for c := range ncomp {
				v := sample(jx, jy, c)
				k := jx*ncomp + c
				var pred int
				switch {
				case jx == 0 && jy == 0:
					pred = 1 << (bits - 1)
				case jx == 0:
					pred = prev[k]
				case jy == 0:
					pred = cur[k-ncomp]
				default:
					ra, rb, rc := cur[k-ncomp], prev[k], prev[k-ncomp]
					switch psv {
					case 2:
						pred = rb
					case 3:
						pred = rc
					case 4:
						pred = ra + rb - rc
					case 5:
						pred = ra + (rb-rc)>>1
					case 6:
						pred = rb + (ra-rc)>>1
					case 7:
						pred = (ra + rb) >> 1
					default:
						pred = ra
					}
				}
				cur[k] = v
				d := (v - pred) & 0xffff
				// T.81 H.1.2.2: differences are taken modulo 2^16.
				if d > 32768 {
					d -= 65536
				}
				vals[i] = int32(d)
				i++
				freq[c%ntab][category(d)]++
			}
		}
		prev, cur = cur, prev
	}
	lengths := make([][]uint8, ntab)
	codes := make([][]uint32, ntab)
	var b []byte
	b = append(b, 0xff, 0xd8)
	dht := []byte{}
	for t := range ntab {
		lengths[t] = huffmanLengths(freq[t][:])
		var bitsCount [17]byte
		var symbols []byte
		codes[t], bitsCount, symbols = canonicalCodes(lengths[t])
		dht = append(dht, byte(t))
		dht = append(dht, bitsCount[1:]...)
		dht = append(dht, symbols...)
	}
	b = appendSegment(b, 0xc4, dht)
	sof := []byte{byte(bits), byte(h >> 8), byte(h), byte(w >> 8), byte(w), byte(ncomp)}
	for c := range ncomp {
		sof = append(sof, byte(c+1), 0x11, 0)
	}
	b = appendSegment(b, 0xc3, sof)
	sos := []byte{byte(ncomp)}
	for c := range ncomp {
		sos = append(sos, byte(c+1), byte((c%ntab)<<4))
	}
	sos = append(sos, byte(psv), 0, 0) // predictor, Se 0, Ah/Al 0
	b = appendSegment(b, 0xda, sos)
	bw := bitWriter{out: b}
	for i, d := range vals {
		t := (i % ncomp) % ntab
		cat := category(int(d))
		bw.put(codes[t][cat], int(lengths[t][cat]))
		if cat > 0 && cat < 16 {
			m := int(d)
			if m < 0 {
				m += (1 << cat) - 1
			}
			bw.put(uint32(m), cat)
		}
	}
	b = bw.flush()
	return append(b, 0xff, 0xd9)
}

// category is the difference category (SSSS) of d: the bit length of |d|,
// 16 for −32768 (T.81 H.1.2.2, which has no extra bits).
func category(d int) int {
	if d < 0 {
		d = -d
	}
	c := 0
	for d>>c != 0 {
		c++
	}
	return c
}

// huffmanLengths returns the code length of each symbol with a nonzero
// frequency (0 for the others): a Huffman code built with a reserved
// all-ones code point (a dummy symbol, as T.81 K.2 does) and then limited to
// 16 bits by T.81 K.2's Adjust_BITS procedure.
func huffmanLengths(freq []int) []uint8 {
	var h nodeHeap
	for s, f := range freq {
		if f > 0 {
			h = append(h, &hnode{f: f, syms: []int{s}})
		}
	}
	// The reserved code point keeps any code from being all ones.
	h = append(h, &hnode{f: 0, syms: []int{-1}})
	heap.Init(&h)
	depth := map[int]int{}
	for h.Len() > 1 {
		a := heap.Pop(&h).(*hnode)
		b := heap.Pop(&h).(*hnode)
		for _, s := range a.syms {
			depth[s]++
		}
		for _, s := range b.syms {
			depth[s]++
		}
		heap.Push(&h, &hnode{f: a.f + b.f, syms: append(a.syms, b.syms...)})
	}
	// count[l] is the number of codes of length l (with the reserved one).
	var count [64]int
	for _, d := range depth {
		count[max(d, 1)]++
	}
	for l := 63; l > 16; l-- { // Adjust_BITS
		for count[l] > 0 {
			j := l - 2
			for count[j] == 0 {
				j--
			}
			count[l] -= 2
			count[l-1]++
			count[j+1] += 2
			count[j]--
		}
	}
	for l := 16; l > 0; l-- { // drop the reserved code: the longest one
		if count[l] > 0 {
			count[l]--
			break
		}
	}
	// Give the shortest lengths to the most frequent symbols.
	syms := make([]int, 0, len(freq))
	for s, f := range freq {
		if f > 0 {
			syms = append(syms, s)
		}
	}
	sort.SliceStable(syms, func(i, j int) bool { return freq[syms[i]] > freq[syms[j]] })
	lengths := make([]uint8, len(freq))
	l := 1
	for _, s := range syms {
		for count[l] == 0 {
			l++
		}
		lengths[s] = uint8(l)
		count[l]--
	}
	return lengths
}

// canonicalCodes assigns the canonical codes of T.81 C.2 to lengths:
// codes[s] for each symbol, the DHT's count of codes of each length
// 1..16 (bitsCount[1..16]) and its symbols in code order.
func canonicalCodes(lengths []uint8) (codes []uint32, bitsCount [17]byte, symbols []byte) {
	codes = make([]uint32, len(lengths))
	code := uint32(0)
	for l := uint8(1); l <= 16; l++ {
		for s, sl := range lengths {
			if sl == l {
				codes[s] = code
				code++
				bitsCount[l]++
				symbols = append(symbols, byte(s))
			}
		}
		code <<= 1
	}
	return codes, bitsCount, symbols
}

// hnode is a subtree of the Huffman construction: its frequency and
// symbols.
type hnode struct {
	f    int
	syms []int
}

// nodeHeap is a min-heap of subtrees by frequency.
type nodeHeap []*hnode

func (h nodeHeap) Len() int           { return len(h) }
func (h nodeHeap) Less(i, j int) bool { return h[i].f < h[j].f }
func (h nodeHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *nodeHeap) Push(x any)        { *h = append(*h, x.(*hnode)) }
func (h *nodeHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func appendSegment(b []byte, marker byte, data []byte) []byte {
	n := len(data) + 2
	return append(append(b, 0xff, marker, byte(n>>8), byte(n)), data...)
}

// bitWriter writes JPEG entropy-coded data, most significant bit first,
// with a 0x00 stuffed after every 0xFF byte.
type bitWriter struct {
	out   []byte
	acc   uint64
	nbits int
}

// put appends the low n (≤ 16) bits of v.
func (w *bitWriter) put(v uint32, n int) {
	w.acc = w.acc<<uint(n) | uint64(v)&(1<<uint(n)-1)
	w.nbits += n
	for w.nbits >= 8 {
		w.nbits -= 8
		w.byte(byte(w.acc >> uint(w.nbits)))
	}
}

func (w *bitWriter) byte(c byte) {
	w.out = append(w.out, c)
	if c == 0xff {
		w.out = append(w.out, 0)
	}
}

// flush pads the last byte with ones (T.81 F.1.2.3) and returns the data.
func (w *bitWriter) flush() []byte {
	if w.nbits > 0 {
		w.put(0xff, 8-w.nbits)
	}
	return w.out
}
