package pipeline

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
)

// lookCorpus is the real-file folder the look table also reads when it
// exists (read-only third-party files; docs/pipeline.md): $RAWBATCH_TEST_CORPUS
// (the Makefile sets it to ../shared/rawcorpus beside the repository),
// else that folder found from this package's directory.
func lookCorpus() string {
	if d := os.Getenv("RAWBATCH_TEST_CORPUS"); d != "" {
		return d
	}
	return filepath.Join("..", "..", "shared", "rawcorpus")
}

// BenchmarkLookTable is the look table of docs/look.md (make bench): for every
// sample file with a usable embedded preview (testdata/raw, and the real
// files of lookCorpus when present), the mean CIEDE2000 against the
// preview (scoreAgainstPreview: both reduced to 256 cells wide in linear
// light) of --look default, --look neutral, and --look camera both
// cross-validated (fit on one half of the grid's 8×8-cell checkerboard,
// scored on the other: look.CameraLook.Residual) and as rendered at full
// resolution, all with --lens off (the camera JPEGs of these bodies keep
// the lens's distortion: the colour tests compare with a reference so).
// The last column is the default as written, with the lens corrected
// where lensfun knows it ("same" where it does not), against the preview
// as stored and against the preview in the output's geometry (scoreLook).
// Files without a usable preview are listed with the reason.
// It prints the table (docs/pipeline.md keeps the latest; its rows start
// with "|" and no space, so TestPipelineDocTable does not read them as
// stages); not timed.
func BenchmarkLookTable(b *testing.B) {
	files, _ := filepath.Glob(filepath.Join(testdata, "raw", "*"))
	corpus := lookCorpus()
	for _, dir := range []string{corpus, filepath.Join(corpus, "stubs")} {
		more, _ := filepath.Glob(filepath.Join(dir, "*"))
		for _, f := range more {
			if fi, err := os.Stat(f); err == nil && fi.Mode().IsRegular() && !strings.HasSuffix(f, ".md") {
				files = append(files, f)
			}
		}
	}
	sort.Strings(files)
	seen := map[string]bool{}
	var rows, skipped []string
	for range b.N {
		for _, in := range files {
			if seen[filepath.Base(in)] {
				continue // the same sample in both folders
			}
			seen[filepath.Base(in)] = true
			row, why := lookRow(b, in)
			if why != "" {
				skipped = append(skipped, fmt.Sprintf("%s: %s", filepath.Base(in), why))
				continue
			}
			rows = append(rows, row)
		}
	}
	fmt.Printf("\n|file|default|camera (cross-validated)|camera (full render)|neutral|default EV|default with the lens corrected|\n|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Println(r)
	}
	fmt.Printf("\nno usable preview (or not decoded): %s\n", strings.Join(skipped, "; "))
}

// lookRow measures one file, or says why it has no row.
func lookRow(b *testing.B, in string) (row, why string) {
	cv, why := cameraResidual(b, in)
	if why != "" {
		return "", why
	}
	dir := b.TempDir()
	score := map[Look]float64{}
	var ev float64
	for _, l := range []Look{LookDefault, LookCamera, LookNeutral} {
		s := DefaultSettings()
		s.Format = PNG16
		s.Look = l
		// The look is compared with the lens left as the camera's JPEG
		// left it (its geometry), as the colour tests do.
		s.Lens = LensOff
		out := filepath.Join(dir, string(l)+".png")
		res, err := ConvertFile(context.Background(), in, out, s)
		if err != nil {
			return "", err.Error()
		}
		if l == LookDefault {
			ev = res.Exposure.EV
		}
		score[l] = scoreAgainstPreview(b, in, out)
	}
	// The default as written, lens corrected where lensfun knows the lens:
	// against the preview as stored, and against the preview put through
	// the same geometric correction (scoreLook).
	asWritten := "same"
	s := DefaultSettings()
	s.Format = PNG16
	out := filepath.Join(dir, "written.png")
	res, err := ConvertFile(context.Background(), in, out, s)
	if err != nil {
		return "", err.Error()
	}
	if res.Lens != nil && res.Lens.Corrections != "" {
		aligned, geometric := scoreLook(b, in, out, s, res)
		asWritten = fmt.Sprintf("%.2f", scoreAgainstPreview(b, in, out))
		if geometric {
			asWritten += fmt.Sprintf(" (%.2f aligned)", aligned)
		}
	}
	return fmt.Sprintf("|%s|%.2f|%s|%.2f|%.2f|%+.2f|%s|", filepath.Base(in), score[LookDefault], cv, score[LookCamera], score[LookNeutral], ev, asWritten), ""
}

// cameraResidual runs the stages up to the exposure-anchor one with --look
// camera and returns the fit's cross-validated residual ("fell back: …"
// when the fit was refused), or why the file has no usable preview.
func cameraResidual(b testing.TB, in string) (string, string) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	s := DefaultSettings()
	s.Look = LookCamera
	s.Lens = LensOff // as the table's other columns
	hdr, err := ReadHeader(in)
	if err != nil {
		return "", err.Error()
	}
	j := &job{in: in, settings: s, hdr: hdr}
	defer j.cleanup()
	for _, st := range activeStages(s) {
		if err := st.run(context.Background(), j); err != nil {
			return "", err.Error()
		}
		if st.Name == "preview" && j.preview == nil {
			return "", j.previewNote
		}
		if st.Name == anchorStage.Name {
			break
		}
	}
	if j.cameraLook == nil {
		return "fell back: " + strings.Join(j.warnings, "; "), ""
	}
	return fmt.Sprintf("%.2f", j.cameraLook.Residual), ""
}
