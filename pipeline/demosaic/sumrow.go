package demosaic

// SumRow adds each sample of a CFA row, clamped to [lo, hi] of its
// column's parity (index x&1: the row's even and odd columns, in DN), to
// sum[x], and adds one to clipped[x] for each clamped sample at or above
// clipAt of its parity. sum and clipped hold at least len(row) values.
// The sums are exact integers, whatever the order; the columns are taken
// sixteen at a time where the build and CPU allow (sumrow_simd.go), the
// rest here. The caller keeps clipped[x] below 65536 (one a row: a CFA
// has at most 65535 rows, LibRaw's raw_height).
func SumRow(row []uint16, lo, hi, clipAt [2]uint16, sum []uint32, clipped []uint16) {
	sum, clipped = sum[:len(row)], clipped[:len(row)]
	x := vecSumRow(row, lo, hi, clipAt, sum, clipped)
	for ; x < len(row); x++ {
		p := x & 1
		v := min(max(row[x], lo[p]), hi[p])
		sum[x] += uint32(v)
		if v >= clipAt[p] {
			clipped[x]++
		}
	}
}
