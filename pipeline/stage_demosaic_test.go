package pipeline

import (
	"slices"
	"testing"
)

// TestDemosaicCost: LibRaw's buffers during the decode, by phase (the
// numbers budget.Estimate had): raw 2 B (8 B for a non-CFA sensor), image
// 8 B, and the larger of the demosaic's scratch and the float copy
// (12 B), per pixel.
func TestDemosaicCost(t *testing.T) {
	peak := func(fi FileInfo, s Settings, threads int) int64 {
		// The raw data comes from the unpack step before it.
		m := demosaicCost(memCtx{fi: fi, s: s, threads: threads})
		return unpackCost(memCtx{fi: fi, s: s}).Alloc + m.Scratch + m.Alloc
	}
	fi := FileInfo{RawWidth: 6000, RawHeight: 4000, CFA: true, Width: 6000, Height: 4000}
	s := DefaultSettings()
	s.Demosaic = "ahd"
	// 24 MP Bayer, AHD: the copy phase dominates.
	if got, want := peak(fi, s, 1), int64(24e6*22); got != want {
		t.Errorf("24 MP AHD: %d, want %d", got, want)
	}
	// DCB's two float copies make the demosaic phase the peak.
	s.Demosaic = "dcb"
	if got, want := peak(fi, s, 1), int64(24e6*(2+8+24)); got != want {
		t.Errorf("24 MP DCB: %d, want %d", got, want)
	}
	// Half size: a quarter of the processed pixels, the full raw. A
	// Bayer file's blocks are binned (demosaic.Half: the float image and
	// two rows a thread), whatever the demosaic asked.
	s.Demosaic, s.HalfSize = "ahd", true
	if got, want := peak(fi, s, 1), int64(24e6*2+6e6*12+8*6000); got != want {
		t.Errorf("24 MP half size: %d, want %d", got, want)
	}
	// LibRaw's half_size processing (highlights not clipped there): its
	// 16-bit image and the float copy.
	s.Highlight = 2
	if got, want := peak(fi, s, 1), int64(24e6*2+6e6*20); got != want {
		t.Errorf("24 MP half size, LibRaw's: %d, want %d", got, want)
	}
	// --wb auto is LibRaw's grey world: its processing decodes the file,
	// RCD's default asked or not (AHD's peak), half size too.
	s = DefaultSettings()
	s.WhiteBalance = WhiteBalance{Mode: "auto"}
	if got, want := peak(fi, s, 1), int64(24e6*22); got != want {
		t.Errorf("24 MP --wb auto: %d, want LibRaw's AHD %d", got, want)
	}
	s.HalfSize = true
	if got, want := peak(fi, s, 1), int64(24e6*2+6e6*20); got != want {
		t.Errorf("24 MP half size --wb auto: %d, want LibRaw's %d", got, want)
	}
	// A linear DNG keeps four samples per raw pixel and is not demosaiced.
	lin := FileInfo{RawWidth: 1000, RawHeight: 1000, Width: 1000, Height: 1000}
	s = DefaultSettings()
	if got, want := peak(lin, s, 1), int64(1e6*(8+8+12)); got != want {
		t.Errorf("linear DNG: %d, want %d", got, want)
	}
	// A tiny AHD image is dominated by the touched part of the tile buffer.
	small := FileInfo{RawWidth: 200, RawHeight: 200, CFA: true, Width: 200, Height: 200}
	s.Demosaic = "ahd"
	if got, want := peak(small, s, 2), int64(40000*(2+8)+26*40000*2); got != want {
		t.Errorf("small AHD: %d, want %d", got, want)
	}
}

// TestEstimateFromSteps: the estimate is the peak over the plan's steps,
// so a stage's declared cost changes it by itself, and it is never below
// the decode's own peak.
func TestEstimateFromSteps(t *testing.T) {
	fi := FileInfo{RawWidth: 6000, RawHeight: 4000, CFA: true, Width: 6000, Height: 4000}
	s := DefaultSettings()
	s.Lens = LensOff   // the lens step's peak is above the decode's (TestLensCost)
	s.Demosaic = "ahd" // LibRaw's decode (RCD's: TestRCDCost)
	m := EstimateMemory(fi, s, 1)
	if len(m.Steps) != len(PlanStages(fi, s).Steps) {
		t.Fatalf("%d step costs for %d steps", len(m.Steps), len(PlanStages(fi, s).Steps))
	}
	var peak int64
	for _, st := range m.Steps {
		peak = max(peak, st.Peak)
	}
	if peak != m.Total {
		t.Errorf("Total %d, peak of steps %d", m.Total, peak)
	}
	// The decode's peak (22 B/px) with the kept preview alive.
	if want := int64(conversionFixedBytes+24e6*22) + previewKeptBytes(6000, 4000); m.Total != want {
		t.Errorf("24 MP JPEG: %d, want %d", m.Total, want)
	}
	// A stage that declares a cost raises the estimate with no other change.
	i := slices.IndexFunc(Stages, func(st Stage) bool { return st.Name == "tone" })
	saved := Stages[i].Cost
	Stages[i].Cost = func(m memCtx) StepMemory { return StepMemory{Scratch: 100 * m.px()} }
	defer func() { Stages[i].Cost = saved }()
	if got := EstimateMemory(fi, s, 1).Total; got != conversionFixedBytes+24e6*(12+100) { // the preview is released before tone
		t.Errorf("with a 100 B/px tone stage: %d", got)
	}
}
