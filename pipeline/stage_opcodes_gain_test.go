package pipeline

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rawbatch/rawbatch/pipeline/synthdng"
)

// TestOpcodeVignetteImplausible: a FixVignetteRadial whose gain is ≤ 0
// in the frame (k0 = −5: black outside a circle) or above 16 is not
// applied; a warning and Result.Opcodes say so, and the flat field stays
// flat.
func TestOpcodeVignetteImplausible(t *testing.T) {
	for _, c := range []struct {
		k    [5]float64
		want string
	}{
		{[5]float64{-5}, "gain ≤ 0 from r = 0.45"},
		{[5]float64{20}, "gain above 16 (4 EV) at the corners"},
	} {
		list := synthdng.OpcodeList(synthdng.VignetteOpcode(c.k, 0.5, 0.5))
		dev, res := flatness(t, synthdng.FlatWithOpcode(list), opcodeSettings())
		if dev > 0.02 {
			t.Errorf("k %v: flat field deviates %.2f %%", c.k, 100*dev)
		}
		if res.Opcodes == nil || !slices.Equal(res.Opcodes.NotApplied, []string{"FixVignetteRadial (list 3)"}) || len(res.Opcodes.Applied) != 0 {
			t.Fatalf("k %v: Result.Opcodes %+v", c.k, res.Opcodes)
		}
		w := strings.Join(res.Warnings, "\n")
		if !strings.Contains(w, "DNG OpcodeList3: FixVignetteRadial not applied: "+c.want) {
			t.Errorf("k %v: warnings %q", c.k, w)
		}
	}
}

// TestOpcodeLossyDNGOff: with --dng-opcodes off the 6D's lossy-DNG
// MapPolynomials are still LibRaw's (its decoder applies them anyway),
// not "not applied".
func TestOpcodeLossyDNGOff(t *testing.T) {
	in := filepath.Join(testdata, "raw", "canon_eos_6d.dng")
	s := opcodeSettings()
	s.DNGOpcodes, s.HalfSize = OpcodesOff, true
	_, res := convert(t, in, t.TempDir(), s)
	want := slices.Repeat([]string{"MapPolynomial (list 2)"}, 3)
	if res.Opcodes == nil || !slices.Equal(res.Opcodes.ByLibRaw, want) || len(res.Opcodes.NotApplied)+len(res.Opcodes.Applied) != 0 {
		t.Fatalf("Result.Opcodes %+v", res.Opcodes)
	}
}
