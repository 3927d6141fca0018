package lens

import "testing"

// BenchmarkNodesRow interpolates one 6000-pixel row of source positions
// of one channel from a grid of nodes (Nodes.row, as Band takes
// them for every row and channel). ns/op is one row.
func BenchmarkNodesRow(b *testing.B) {
	const w, h = 6000, 4000
	g, err := NewNodes(w, h, func(dst, xy []float32) error {
		for i := 0; i < len(xy); i += 2 {
			for ch := range 3 {
				s := 1.001 + 0.0003*float32(ch)
				dst[3*i+2*ch], dst[3*i+2*ch+1] = xy[i]*s, xy[i+1]*s
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	sx, sy := make([]float32, w), make([]float32, w)
	y := 0
	for b.Loop() {
		g.row(y, 1, sx, sy)
		y = (y + 1) % h
	}
}
