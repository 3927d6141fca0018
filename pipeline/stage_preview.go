package pipeline

import (
	"context"
	"errors"
	"fmt"

	"github.com/rawbatch/rawbatch/pipeline/internal/jpegturbo"
	"github.com/rawbatch/rawbatch/pipeline/internal/libraw"
	"github.com/rawbatch/rawbatch/pipeline/look"
)

// previewStage extracts and decodes the file's embedded preview when a
// setting needs it (job.needPreview): the reference of the preview-anchored
// exposure, of --look camera and of the white balance fitted to the
// preview. It needs LibRaw's open handle, so it runs right after open.
var previewStage = Stage{Name: "preview", Scope: PerFile, Kind: IO, Cost: previewCost, Active: previewActive, run: stagePreview}

// previewActive: the preview stage is planned when the look uses the
// preview (Settings.needsPreview) or the white balance is --wb camera,
// whose fallback for a file without usable as-shot multipliers fits the
// gains to the preview: only the file tells, so the stage stays planned
// and extracts nothing when the file does not need it (job.needPreview).
func previewActive(s Settings) bool {
	return s.needsPreview() || s.WhiteBalance.Mode == "camera"
}

// PreviewMaxLong is the largest long side, in pixels, of the decoded
// preview rawbatch keeps (job.preview): the comparison grid is 256 cells
// wide (look.GridWidth), so 512 leaves every cell 2×2 preview pixels
// averaged in linear light, while a 24 MP embedded JPEG never becomes a
// full-size float image (a 512×341 float preview is 2 MiB).
const PreviewMaxLong = 512

// lookJob is the job's state of the look: the embedded preview and what
// the anchor and the camera look made of it (embedded in job).
type lookJob struct {
	// preview is the embedded preview, display-linear in preview.Space,
	// centre-cropped to the raw's aspect ratio and box-reduced to at most
	// PreviewMaxLong pixels along its long side, in sensor orientation
	// (not rotated by Flip, like the camera image before the orientation
	// stage); nil when no setting needs it or none is usable, and again
	// after the exposure-anchor stage, its last reader.
	preview *look.Preview
	// previewNote says why preview is nil although a setting needed it
	// ("" otherwise): no preview in the file, LibRaw could not extract it,
	// or look.DecodePreview found it unusable (too small, other aspect,
	// undecodable).
	previewNote string
	// srcPreview is the embedded preview decoded whole as a variant's
	// source (stage_previewsource.go: sourcePreview), srcPreviewErr why
	// it cannot be one; both nil until a variant asks for it.
	srcPreview    *look.Preview
	srcPreviewErr error
	// thumb is the embedded preview as LibRaw extracted it (thumbnail),
	// thumbErr why it could not be; LibRaw extracts it once per open.
	thumb    *libraw.Thumb
	thumbErr error

	exposureState // the exposure applied and its source (stage_anchor.go)
}

// needPreview reports whether the preview stage must extract the preview
// for this file; cheap, asked before the preview stage runs.
func (j *job) needPreview() bool { return j.settings.needsPreview() || j.wbNeedsPreview() }

// previewCost: when the settings use the preview, the decoded 8-bit
// preview (at most 3 bytes per pixel of the image's size, which no
// embedded preview exceeds; its JPEG bytes are smaller than that) while
// the stage runs; after it, the kept float preview (previewKeptBytes).
func previewCost(m memCtx) StepMemory {
	if !m.s.needsPreview() {
		return StepMemory{}
	}
	w, h := m.fi.Width, m.fi.Height
	if w <= 0 || h <= 0 {
		w, h = m.fi.RawWidth, m.fi.RawHeight
	}
	return StepMemory{Scratch: 3 * int64(w) * int64(h), Alloc: previewKeptBytes(w, h)}
}

// previewKeptBytes is the size of job.preview for a w×h image: W×H×3
// float32 at most PreviewMaxLong on the long side, in the image's aspect,
// and its score grid (Preview.Cells, look.GridWidth cells on one side).
func previewKeptBytes(w, h int) int64 {
	if w <= 0 || h <= 0 {
		return 0
	}
	lw, lh := w, h
	if max(w, h) > PreviewMaxLong {
		if w >= h {
			lw, lh = PreviewMaxLong, max(1, PreviewMaxLong*h/w)
		} else {
			lw, lh = max(1, PreviewMaxLong*w/h), PreviewMaxLong
		}
	}
	gw, gh := look.GridSize(lw, lh, look.GridWidth)
	return 12*int64(lw)*int64(lh) + 12*int64(gw)*int64(gh+1) // and Preview.Cells
}

// thumbnail extracts the embedded preview once per file (LibRaw refuses
// a second unpack_thumb on some formats, a CRW among them): the anchor's
// preview and a variant's source share it.
func (j *job) thumbnail() (libraw.Thumb, error) {
	if j.thumb == nil && j.thumbErr == nil {
		t, err := j.h.Thumbnail()
		if err != nil && !errors.Is(err, libraw.ErrWrongThread) {
			j.thumbErr = err
		} else if err == nil {
			j.thumb = &t
		}
		if err != nil {
			return libraw.Thumb{}, err
		}
	}
	if j.thumbErr != nil {
		return libraw.Thumb{}, j.thumbErr
	}
	return *j.thumb, nil
}

// previewCellPixels is the fewest decoded preview pixels along a side of
// the anchor's grid cells: a JPEG preview is decoded at the smallest DCT
// scale (libjpeg's scaled IDCT) that keeps its long side at least this
// many times the grid's (1024 pixels for the 256-cell grid), so a
// full-size 24 MP preview decodes a sixteenth of its pixels; a preview
// already smaller decodes whole, as it is.
const previewCellPixels = 4

// previewDecodeHook, when set (tests), is called with the DCT scale
// denominator the anchor's preview is decoded at; previewFullDecode, when
// set (tests), decodes it whole.
var (
	previewDecodeHook func(denom int)
	previewFullDecode bool
)

// decodeAnchorPreview decodes the JPEG preview data for the anchor and
// the camera look (look.DecodePreviewRGBGrid on libjpeg-turbo's decode at
// the scale previewCellPixels allows), reduced to PreviewMaxLong and to
// the gw×gh score grid of the pw×ph picture. Errors as
// look.DecodePreviewGrid's.
func decodeAnchorPreview(data []byte, pw, ph, gw, gh int) (*look.Preview, error) {
	fw, fh, err := jpegturbo.Size(data, 1)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", look.ErrPreviewUnusable, err)
	}
	long := previewCellPixels * max(gw, gh)
	minW, minH := long, long*min(fw, fh)/max(1, max(fw, fh))
	if fh > fw {
		minW, minH = minH, minW
	}
	denom := jpegturbo.DenomFor(fw, fh, minW, minH)
	if previewFullDecode {
		denom = 1
	}
	if previewDecodeHook != nil {
		previewDecodeHook(denom)
	}
	rgb, w, h, err := jpegturbo.DecodeRGB(data, denom)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", look.ErrPreviewUnusable, err)
	}
	space, source := look.ReadPreviewSpace(data)
	p, err := look.DecodePreviewRGBGrid(rgb, w, h, space, source, pw, ph, PreviewMaxLong, gw, gh)
	if err != nil {
		return nil, err
	}
	p.SourceW, p.SourceH = fw, fh
	return p, nil
}

func stagePreview(_ context.Context, j *job) error {
	if !j.needPreview() {
		return nil
	}
	t, err := j.thumbnail()
	switch {
	case errors.Is(err, libraw.ErrWrongThread):
		return err
	case errors.Is(err, libraw.ErrNoThumbnail):
		j.previewNote = "no embedded preview"
		return nil
	case err != nil:
		j.previewNote = fmt.Sprintf("embedded preview not extracted: %v", err)
		return nil
	}
	bw, bh := 0, 0
	if t.Format == libraw.ThumbBitmap {
		bw, bh = t.Width, t.Height
	}
	// The fits compare the grid the look score uses (look.ScoreGridSize),
	// reduced from the decoded preview, not from the kept reduced copy.
	pw, ph := j.pictureSize() // the area the outputs cover (--crop)
	gw, gh := look.ScoreGridSize(pw, ph)
	var p *look.Preview
	if bw == 0 {
		p, err = decodeAnchorPreview(t.Data, pw, ph, gw, gh)
	} else {
		p, err = look.DecodePreviewGrid(t.Data, bw, bh, t.Colors, pw, ph, PreviewMaxLong, gw, gh)
	}
	if err != nil {
		j.previewNote = err.Error()
		return nil
	}
	j.preview = p
	return nil
}
