package colour

import "math"

// Mat3 is a 3×3 matrix stored row-major: m[row][col]. It acts on column
// vectors, so Mat3.Apply computes m·v, and a.Mul(b) is the matrix product
// a·b, i.e. the transform that applies b first and then a.
type Mat3 [3][3]float64

// Identity3 is the 3×3 identity matrix.
var Identity3 = Mat3{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}

// Mul returns the matrix product a·b (apply b first, then a).
func (a Mat3) Mul(b Mat3) Mat3 {
	var c Mat3
	for i := 0; i < 3; i++ {
		for j := 0; j < 3; j++ {
			c[i][j] = a[i][0]*b[0][j] + a[i][1]*b[1][j] + a[i][2]*b[2][j]
		}
	}
	return c
}

// Apply returns the matrix-vector product a·v for a column vector v.
func (a Mat3) Apply(v [3]float64) [3]float64 {
	return [3]float64{
		a[0][0]*v[0] + a[0][1]*v[1] + a[0][2]*v[2],
		a[1][0]*v[0] + a[1][1]*v[1] + a[1][2]*v[2],
		a[2][0]*v[0] + a[2][1]*v[1] + a[2][2]*v[2],
	}
}

// Det returns the determinant of a.
func (a Mat3) Det() float64 {
	return a[0][0]*(a[1][1]*a[2][2]-a[1][2]*a[2][1]) -
		a[0][1]*(a[1][0]*a[2][2]-a[1][2]*a[2][0]) +
		a[0][2]*(a[1][0]*a[2][1]-a[1][1]*a[2][0])
}

// Transpose returns the transpose of a.
func (a Mat3) Transpose() Mat3 {
	var t Mat3
	for i := 0; i < 3; i++ {
		for j := 0; j < 3; j++ {
			t[i][j] = a[j][i]
		}
	}
	return t
}

// Inverse returns a⁻¹ computed from the adjugate (cofactor) matrix divided by
// the determinant. ok is false when a is singular or numerically so: when the
// determinant is zero, not finite, or smaller than 1e-14 times the cube of the
// largest absolute entry (a scale-independent conditioning guard).
func (a Mat3) Inverse() (inv Mat3, ok bool) {
	det := a.Det()
	maxAbs := 0.0
	for i := 0; i < 3; i++ {
		for j := 0; j < 3; j++ {
			maxAbs = math.Max(maxAbs, math.Abs(a[i][j]))
		}
	}
	if det == 0 || math.IsNaN(det) || math.IsInf(det, 0) || math.Abs(det) < 1e-14*maxAbs*maxAbs*maxAbs {
		return Mat3{}, false
	}
	d := 1 / det
	inv[0][0] = (a[1][1]*a[2][2] - a[1][2]*a[2][1]) * d
	inv[0][1] = (a[0][2]*a[2][1] - a[0][1]*a[2][2]) * d
	inv[0][2] = (a[0][1]*a[1][2] - a[0][2]*a[1][1]) * d
	inv[1][0] = (a[1][2]*a[2][0] - a[1][0]*a[2][2]) * d
	inv[1][1] = (a[0][0]*a[2][2] - a[0][2]*a[2][0]) * d
	inv[1][2] = (a[0][2]*a[1][0] - a[0][0]*a[1][2]) * d
	inv[2][0] = (a[1][0]*a[2][1] - a[1][1]*a[2][0]) * d
	inv[2][1] = (a[0][1]*a[2][0] - a[0][0]*a[2][1]) * d
	inv[2][2] = (a[0][0]*a[1][1] - a[0][1]*a[1][0]) * d
	return inv, true
}

// Diag returns the diagonal matrix diag(v[0], v[1], v[2]).
func Diag(v [3]float64) Mat3 {
	return Mat3{{v[0], 0, 0}, {0, v[1], 0}, {0, 0, v[2]}}
}

// mustInverse is Inverse for matrices known to be well conditioned (derived
// from valid primaries); it panics otherwise, which would be a programming
// error in this package's tables.
func (a Mat3) mustInverse() Mat3 {
	inv, ok := a.Inverse()
	if !ok {
		panic("colour: singular matrix")
	}
	return inv
}
