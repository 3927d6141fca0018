package pipeline

import (
	"context"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// openForPreview runs the open and preview stages on in with s.
func openForPreview(t testing.TB, in string, s Settings) *job {
	t.Helper()
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
	hdr, err := ReadHeader(in) // as ConvertOutputs has it: the picture area (--crop)
	if err != nil {
		t.Fatal(err)
	}
	j := &job{in: in, settings: s, hdr: hdr}
	t.Cleanup(j.cleanup)
	if err := stageOpen(context.Background(), j); err != nil {
		t.Fatal(err)
	}
	if err := stagePreview(context.Background(), j); err != nil {
		t.Fatal(err)
	}
	return j
}

// TestPreviewStage: with the default settings (anchor preview) the 6D
// DNG's 1024×683 and the D30 CRW's 1440×960 previews are decoded at
// the raw's aspect and reduced to PreviewMaxLong (512) wide;
// --look neutral extracts nothing; a synthetic DNG without a preview gets
// a note, not an error.
func TestPreviewStage(t *testing.T) {
	for _, tc := range []struct {
		file string
		w    int
	}{{"canon_eos_6d.dng", 512}, {"canond30_CRW.CRW", 512}} {
		j := openForPreview(t, filepath.Join(testdata, "raw", tc.file), DefaultSettings())
		p := j.preview
		if p == nil {
			t.Fatalf("%s: no preview (%s)", tc.file, j.previewNote)
		}
		ar, ap := float64(j.info.Width)/float64(j.info.Height), float64(p.Image.W)/float64(p.Image.H)
		if p.Image.W != tc.w || max(p.Image.W, p.Image.H) > PreviewMaxLong || ap/ar > 1.01 || ar/ap > 1.01 {
			t.Errorf("%s: preview %d×%d (decoded %d×%d), raw %d×%d", tc.file, p.Image.W, p.Image.H, p.SourceW, p.SourceH, j.info.Width, j.info.Height)
		}
		if len(p.Image.Pix) != 3*p.Image.W*p.Image.H {
			t.Errorf("%s: %d values", tc.file, len(p.Image.Pix))
		}
	}
	s := DefaultSettings()
	s.Look = LookNeutral
	if j := openForPreview(t, filepath.Join(testdata, "raw", "canon_eos_6d.dng"), s); j.preview != nil || j.previewNote != "" {
		t.Errorf("--look neutral: preview %v, note %q", j.preview != nil, j.previewNote)
	}
	j := openForPreview(t, writeSynthetic(t, t.TempDir(), 64, 48), DefaultSettings())
	if j.preview != nil || !strings.Contains(j.previewNote, "preview") {
		t.Errorf("synthetic DNG: preview %v, note %q", j.preview != nil, j.previewNote)
	}
}

// TestPreviewCost: the preview stage declares memory only when a setting
// uses the preview: the kept 512-pixel copy and its score grid
// (Preview.Cells, 256 cells wide, one row of slack for the rounding).
func TestPreviewCost(t *testing.T) {
	m := memCtx{fi: FileInfo{RawWidth: 6000, RawHeight: 4000}, s: DefaultSettings()}
	m.fi.Width, m.fi.Height = 6000, 4000
	if c := previewCost(m); c.Scratch != 3*24e6 || c.Alloc != 12*512*341+12*256*172 {
		t.Errorf("anchor preview: %+v", c)
	}
	m.s.Tone = ToneNone
	if c := previewCost(m); c != (StepMemory{}) {
		t.Errorf("--tone none: %+v", c)
	}
	m.s.Tone, m.s.ExposureAnchor = ToneDefault, AnchorNone
	if c := previewCost(m); c != (StepMemory{}) {
		t.Errorf("no preview needed: %+v", c)
	}
}
