package look

import (
	"slices"
	"testing"
)

// TestToneLUTDefaultMadeOnce: the default curve's table is made once and
// shared (a worker converting many small files does not tabulate the curve
// for each), with the values of a table made afresh; another curve gets
// its own.
func TestToneLUTDefaultMadeOnce(t *testing.T) {
	a, b := ToneLUT(DefaultCurve), ToneLUT(DefaultCurve)
	if &a[0] != &b[0] {
		t.Error("the default curve's table was made twice")
	}
	if !slices.Equal(a, toneLUT(DefaultCurve)) {
		t.Error("the shared table differs from one made afresh")
	}
	other := NewParametric(1.4, 0.18, 0.39, 1)
	o := ToneLUT(other)
	if &o[0] == &a[0] || !slices.Equal(o, toneLUT(other)) {
		t.Error("another curve did not get its own table")
	}
}
