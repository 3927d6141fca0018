package look

import (
	"math"

	"github.com/rawbatch/rawbatch/pipeline/colour"
)

// referenceEVScore is the direct form of evRender.score (the bound is
// ignored): every cell of cells of c.Scene scaled by 2^ev, rendered by
// model.render and compared with the preview by colour.DeltaE2000.
func referenceEVScore(c Cells, cells []int, curve Curve, space *colour.Space, model renderModel) func(ev, bound float64) float64 {
	pLab := make([]colour.Lab, len(cells))
	for i, k := range cells {
		pLab[i] = space.LinearToLab(clampCube(c.Preview.cell(k)))
	}
	return func(ev, _ float64) float64 {
		g := math.Exp2(ev)
		var sum float64
		for i, k := range cells {
			s := c.Scene.cell(k)
			t := model.render(curve, [3]float64{s[0] * g, s[1] * g, s[2] * g})
			sum += colour.DeltaE2000(space.LinearToLab(t), pLab[i])
		}
		return sum / float64(len(cells))
	}
}
