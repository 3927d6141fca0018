package pipeline

import (
	"context"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"github.com/rawbatch/rawbatch/pipeline/highlight"
	"github.com/rawbatch/rawbatch/pipeline/synthdng"
)

// TestWhiteLevelOnePass: the white-level stage, which counts one
// histogram for the levels and the pile search and rescales through a
// table, finds exactly the white level and leaves exactly the raw data of
// the stage as first written (Levels, then a second RawHistogram, then the
// per-photosite rescale), on the Bayer samples (the D30's clipped pile is
// rescaled) and a synthetic DNG with a clipped area.
func TestWhiteLevelOnePass(t *testing.T) {
	dir := t.TempDir()
	files := append(bayerSamples(), writeSyntheticClipped(t, dir))
	for _, in := range files {
		t.Run(filepath.Base(in), func(t *testing.T) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			s := DefaultSettings()
			want, wantRaw := oldWhiteLevel(t, in, s)
			j := unpacked(t, in, s)
			defer j.cleanup()
			if err := stageWhiteLevel(context.Background(), j); err != nil {
				t.Fatal(err)
			}
			raw, _, _, err := j.h.CopyRaw(nil)
			if err != nil {
				t.Fatal(err)
			}
			if j.levels != want {
				t.Errorf("levels %+v, want %+v", j.levels, want)
			}
			if !slices.Equal(raw, wantRaw) {
				t.Error("raw data after the stage differ from the per-photosite rescale")
			}
			t.Logf("white %g, rescaled %v", j.levels.white, j.levels.rescaled)
		})
	}
}

// writeSyntheticClipped writes a small DNG whose top rows clip at a level
// below the tagged white, channel by channel, so that the stage finds a
// pile and rescales.
func writeSyntheticClipped(t testing.TB, dir string) string {
	in := filepath.Join(dir, "clipped.dng")
	spec := syntheticSpec(600, 400)
	scene := spec.Scene
	spec.Scene = func(x, y, c int) float64 {
		if y < 100 {
			return []float64{0.93, 0.97, 0.9}[c]
		}
		return scene(x, y, c)
	}
	if err := synthdng.WriteFile(in, spec); err != nil {
		t.Fatal(err)
	}
	return in
}

// unpacked returns a job for in with settings s after its steps up to
// and including unpack.
func unpacked(t testing.TB, in string, s Settings) *job {
	t.Helper()
	hdr, err := ReadHeader(in)
	if err != nil {
		t.Fatal(err)
	}
	j := &job{in: in, settings: s, hdr: hdr}
	for _, st := range PlanStages(InfoFromHeader(hdr), s).Steps {
		if err := st.stage.run(context.Background(), j); err != nil {
			j.cleanup()
			t.Fatalf("%s: %s: %v", in, st.Name, err)
		}
		if st.Name == "unpack" {
			return j
		}
	}
	j.cleanup()
	t.Fatalf("%s: no unpack step", in)
	return nil
}

// oldWhiteLevel is the white-level stage as first written, with the
// rescale done per photosite in Go (highlight.Rescale.Apply, the formula
// RescaleRaw documents): the levels it sets and the raw data it leaves.
func oldWhiteLevel(t *testing.T, in string, s Settings) (rawLevels, []uint16) {
	j := unpacked(t, in, s)
	defer j.cleanup()
	lv, err := j.h.Levels()
	if err != nil {
		t.Fatal(err)
	}
	got := rawLevels{ok: true, black: lv.Black, white: float64(lv.White)}
	hist, err := j.h.RawHistogram()
	if err != nil {
		t.Fatal(err)
	}
	raw, w, h, err := j.h.CopyRaw(nil)
	if err != nil {
		t.Fatal(err)
	}
	r := highlight.RescaleFromHistogram(hist, lv.White, lv.Black)
	if r.White <= 0 || r.White > 65535 {
		return got, raw
	}
	for k := range 4 {
		r.Black[k] = max(r.Black[k], 0)
	}
	pat, err := j.h.CFAPattern(48, 48)
	if err != nil {
		t.Fatal(err)
	}
	r.Apply(raw, w, h, func(row, col int) int { return int(pat[(row%48)*48+col%48]) })
	got.white, got.rescaled = float64(r.White), true
	return got, raw
}

// TestWhiteLevelCountersKept: the stage's histogram counters are kept from
// file to file, zeroed (a worker counts each small file's into memory it
// already has), and the next file's count, into them, finds what a count
// into fresh counters finds (TestWhiteLevelOnePass).
func TestWhiteLevelCountersKept(t *testing.T) {
	in := writeSyntheticClipped(t, t.TempDir())
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	run := func() {
		j := unpacked(t, in, DefaultSettings())
		defer j.cleanup()
		if err := stageWhiteLevel(context.Background(), j); err != nil {
			t.Fatal(err)
		}
	}
	rawHistograms.mu.Lock()
	rawHistograms.free = nil
	rawHistograms.mu.Unlock()
	run()
	rawHistograms.mu.Lock()
	kept := slices.Clone(rawHistograms.free)
	rawHistograms.mu.Unlock()
	if len(kept) == 0 {
		t.Fatal("no histogram counters kept after the stage")
	}
	next := kept[len(kept)-1] // the ones the next count takes
	run()
	rawHistograms.mu.Lock()
	defer rawHistograms.mu.Unlock()
	if len(rawHistograms.free) != len(kept) || !slices.ContainsFunc(rawHistograms.free, func(b []uint32) bool { return &b[0] == &next[0] }) {
		t.Error("the next file's count did not use the counters kept")
	}
	for _, b := range rawHistograms.free {
		if slices.ContainsFunc(b, func(n uint32) bool { return n != 0 }) {
			t.Fatal("counters kept without being zeroed")
		}
	}
}
