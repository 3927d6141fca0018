package pipeline

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/rawbatch/rawbatch/internal/rawerr"
	"github.com/rawbatch/rawbatch/pipeline/colour"
	"github.com/rawbatch/rawbatch/pipeline/internal/jpegturbo"
	"github.com/rawbatch/rawbatch/pipeline/internal/libraw"
	"github.com/rawbatch/rawbatch/pipeline/internal/par"
	"github.com/rawbatch/rawbatch/pipeline/look"
	"github.com/rawbatch/rawbatch/pipeline/resize"
)

// previewSourceStage makes a variant asked with source=preview (or
// source=auto, when the preview qualifies: resolveSources) from the
// file's embedded preview instead of its raw data: the preview decoded,
// its transfer function undone (display-referred linear light in the
// preview's own space, sRGB or Adobe RGB from its EXIF), converted to the
// working space and downscaled in linear light to the variant's size. The
// variant's output-space, orientation, quantise and encode steps follow as
// for any variant (the preview is stored in the sensor's orientation, like
// the raw data, so the raw's orientation turns it upright); the camera
// matrix, exposure and tone steps do not: the camera rendered the preview.
var previewSourceStage = Stage{Name: "preview-source", Scope: PerVariant, Kind: IO, Cost: previewSourceCost, run: stagePreviewSource}

// MinPreviewSourceLong is the shortest long edge, in pixels, of a preview
// that may be a variant's source: shorter ones are thumbnails (160×120,
// 640×480) whatever the variant's size.
const MinPreviewSourceLong = 1024

// Source values of a variant (Variant.Source).
const (
	SourceRaw     = ""        // the raw data (source=raw, the default)
	SourcePreview = "preview" // the embedded preview, or the file fails
	SourceAuto    = "auto"    // the preview when it qualifies, else the raw
)

// previewSourceCost: the embedded preview's decode (previewDecodeBytes),
// counted at every variant made from it (the first decodes it, the later
// ones read its kept, smaller result: sourcePreview); the Lanczos-3
// downscale's horizontal pass (12 bytes a pixel of the variant's long
// edge by the reduced preview's short one, the preview being stored in
// the variant's aspect); and the variant's image (12 bytes a pixel
// of its size, kept until its quantise).
func previewSourceCost(m memCtx) StepMemory {
	peak, _, rs := previewDecodeBytes(m.fi, m.s)
	return StepMemory{Scratch: peak + 12*int64(max(m.step.W, m.step.H))*int64(rs), Alloc: 12 * m.px()}
}

// previewDecodeBytes is the peak memory in bytes of decoding the embedded
// preview of the file described by fi as the source of s's variants that
// may be made from it (sourcePreview), and the size in pixels of the
// reduced preview it keeps (long edge first). The preview's size is the
// header's (Header.PreviewWidth), else at most the image's. Its data,
// counted as 3 bytes a pixel (a bitmap's; a camera's JPEG is smaller),
// is held twice while LibRaw hands it over and once after (job.thumb); a
// JPEG is decoded to 8-bit RGB at the DCT scale decodeSourcePreview
// picks, and box-reduced to twice the longest variant's long edge in
// float (12 bytes a pixel) while that RGB is alive.
func previewDecodeBytes(fi FileInfo, s Settings) (peak int64, rl, rs int) {
	pw, ph := fi.Width, fi.Height
	if pw <= 0 || ph <= 0 {
		pw, ph = fi.RawWidth, fi.RawHeight
	}
	jpeg := true
	if h := fi.Header; h != nil && h.SizeFromLibRaw && h.PreviewWidth > 0 && h.PreviewHeight > 0 {
		pw, ph, jpeg = h.PreviewWidth, h.PreviewHeight, h.PreviewJPEG
	}
	pl, ps := max(pw, ph), min(pw, ph)
	// The largest variant the preview may make, long and short side
	// (sourcePreviewNeeds, orientation-free).
	var vl, vs int
	dw, dh := DecodedSize(fi, s)
	for _, v := range s.OutputVariants() {
		if v.Source == SourceRaw {
			continue
		}
		w, h := v.Fit(dw, dh)
		vl, vs = max(vl, w, h), max(vs, min(w, h))
	}
	data := 3 * int64(pl) * int64(ps)
	var rgb int64
	sl, ss := pl, ps
	if jpeg {
		d := jpegturbo.DenomFor(pl, ps, vl+vl*3/100+1, vs+vs*3/100+1)
		sl, ss = jpegturbo.ScaledSize(pl, ps, d)
		rgb = 3 * int64(sl) * int64(ss)
	}
	rl, rs = sl, ss
	if vl > 0 && sl > 2*vl {
		rl, rs = 2*vl, max(1, int(int64(2*vl)*int64(ss)/int64(sl)))
	}
	return max(2*data, data+rgb+12*int64(rl)*int64(rs)), rl, rs
}

// NoPreviewError is the failure of a variant asked with source=preview
// of a file without a usable embedded preview: it has none, it is a
// thumbnail or smaller than the variant, or it cannot be extracted or
// decoded (Reason says which). It is of the kind unsupported (it unwraps
// to rawerr.ErrUnsupported: the file is not damaged, its preview cannot
// make the variant) but worded for what it is; the caller names the file.
type NoPreviewError struct {
	Variant, Reason string
}

// noPreviewText is what every NoPreviewError says.
const noPreviewText = "source=preview: no usable embedded preview"

// NoPreviewCode is the reason code (rawerr.Code) of a NoPreviewError, by
// which IsNoPreview knows one that came back from a worker process.
const NoPreviewCode = "no-preview"

// noPreviewReason is the reason a file with no embedded preview at all
// gives (a source=auto variant's source_reason; NoPreviewError words it
// "the file has none").
const noPreviewReason = "the file has no embedded preview"

func (e *NoPreviewError) Error() string {
	why := e.Reason
	if why == noPreviewReason {
		why = "the file has none"
	}
	return fmt.Sprintf("variant %s, %s: %s", e.Variant, noPreviewText, why)
}

func (e *NoPreviewError) Unwrap() error { return rawerr.ErrUnsupported }

// ReasonCode is NoPreviewCode (rawerr.Code).
func (e *NoPreviewError) ReasonCode() string { return NoPreviewCode }

// IsNoPreview reports whether err is, or came back from a worker as, a
// *NoPreviewError (its reason code, rawerr.Code).
func IsNoPreview(err error) bool { return rawerr.Code(err) == NoPreviewCode }

// stagePreviewSource makes the current variant's image from the embedded
// preview (previewSourceStage), at the size the variant has from the raw
// (Variant.Fit of the decoded size). A preview that is missing,
// undecodable, a thumbnail (MinPreviewSourceLong) or smaller than the
// variant fails the file with a *NoPreviewError naming the reason
// (source=auto never gets here with such a preview).
func stagePreviewSource(_ context.Context, j *job) error {
	v := j.cur
	p, err := j.sourcePreview()
	if err != nil {
		return &NoPreviewError{Variant: v.spec.Variant.Name, Reason: err.Error()}
	}
	if j.settings.Edit.Crop != nil {
		j.warnings = append(j.warnings, fmt.Sprintf("variant %s, source=preview: the sidecar's crop is not applied to a variant made from the embedded preview", v.spec.Variant.Name))
	}
	dw, dh := j.variantSize(v.spec.Variant)
	if why := previewRefusal(p, dw, dh); why != "" {
		return &NoPreviewError{Variant: v.spec.Variant.Name, Reason: why}
	}
	// The matrix to the working space and the downscale are both linear,
	// so the matrix runs on the smaller image: after the downscale, in
	// its output, or into a copy when there is none (the decoded preview
	// is shared by the file's variants).
	m := colour.ConvertMatrix(p.Space, WorkingSpace)
	var f [9]float32
	for r := range 3 {
		for c := range 3 {
			f[3*r+c] = float32(m[r][c])
		}
	}
	var pix []float32
	if dw != p.Image.W || dh != p.Image.H {
		pix = resize.Downscale(p.Image.Pix, p.Image.W, p.Image.H, 3, dw, dh)
	} else {
		pix = make([]float32, len(p.Image.Pix))
		copy(pix, p.Image.Pix)
	}
	par.Rows(dh, func(lo, hi int) {
		for i := 3 * lo * dw; i < 3*hi*dw; i += 3 {
			r, g, b := pix[i], pix[i+1], pix[i+2]
			pix[i] = f[0]*r + f[1]*g + f[2]*b
			pix[i+1] = f[3]*r + f[4]*g + f[5]*b
			pix[i+2] = f[6]*r + f[7]*g + f[8]*b
		}
	})
	v.img = Image{W: dw, H: dh, Pix: pix}
	v.owned = true
	v.source = "preview"
	return nil
}

// variantSize is the size variant v has when made from the raw: its fit
// (Variant.Fit) of the picture LibRaw decodes (the camera's picture area,
// halved with --half-size), in the sensor's orientation as the preview
// is stored.
func (j *job) variantSize(v Variant) (w, h int) {
	pw, ph := j.pictureSize()
	return v.Fit(halvedIf(j.settings.HalfSize, pw, ph))
}

// sourcePreview decodes the embedded preview once per file, as a source
// (look.DecodePreviewReduced, to sourcePreviewLong: centre-cropped to the raw's aspect ratio when it
// differs by at most look.MaxAspectMismatch, refused when it differs by
// more or is no picture of the raw's).
func (j *job) sourcePreview() (*look.Preview, error) {
	if j.srcPreview != nil || j.srcPreviewErr != nil {
		return j.srcPreview, j.srcPreviewErr
	}
	j.srcPreview, j.srcPreviewErr = j.decodeSourcePreview()
	return j.srcPreview, j.srcPreviewErr
}

func (j *job) decodeSourcePreview() (*look.Preview, error) {
	t, err := j.thumbnail()
	switch {
	case errors.Is(err, libraw.ErrNoThumbnail):
		return nil, errors.New(noPreviewReason)
	case err != nil:
		return nil, fmt.Errorf("embedded preview not extracted: %w", err)
	}
	pw, ph := j.pictureSize()
	long, minW, minH := j.sourcePreviewNeeds()
	if t.Format == libraw.ThumbBitmap {
		return look.DecodePreviewReduced(t.Data, t.Width, t.Height, t.Colors, pw, ph, long)
	}
	// A JPEG is decoded at the smallest DCT scale that still holds the
	// largest variant (libjpeg's scaled IDCT: a 6000 px preview of a 512
	// px variant decodes 1/8 of its pixels), with 3 % to spare for the
	// crop to the raw's aspect ratio.
	fw, fh, err := jpegturbo.Size(t.Data, 1)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", look.ErrPreviewUnusable, err)
	}
	denom := jpegturbo.DenomFor(fw, fh, minW+minW*3/100+1, minH+minH*3/100+1)
	rgb, w, h, err := jpegturbo.DecodeRGB(t.Data, denom)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", look.ErrPreviewUnusable, err)
	}
	space, source := look.ReadPreviewSpace(t.Data)
	p, err := look.DecodePreviewRGB(rgb, w, h, space, source, pw, ph, long)
	if err != nil {
		return nil, err
	}
	p.SourceW, p.SourceH = fw, fh // the preview's own size, before the scaled decode
	return p, nil
}

// sourcePreviewNeeds returns the long edge, in pixels, the source preview
// is box-reduced to as it is decoded (look.DecodePreviewReduced; 0: kept
// whole), twice the longest variant it may make, so that the Lanczos-3
// downscale to each variant starts from at most four times its pixels
// (the box reduction's gap, as resize.Downscale's own reducing gap) and a
// full-size preview is never held whole as float; and the size, in the
// sensor's orientation, of the largest variant it may make.
func (j *job) sourcePreviewNeeds() (long, w, h int) {
	for _, v := range j.outs {
		if v.spec.Variant.Source == SourceRaw {
			continue
		}
		vw, vh := j.variantSize(v.spec.Variant)
		long, w, h = max(long, 2*max(vw, vh)), max(w, vw), max(h, vh)
	}
	return long, w, h
}

// previewRefusal says why preview p (decoded, cropped to the raw's aspect
// ratio and reduced to p.Image; p.SourceW×p.SourceH its own size) cannot
// make a variant of dw×dh pixels, "" when it can: a thumbnail (its own
// long edge under MinPreviewSourceLong) never does, and a
// preview is never enlarged (the variant's size is what the raw would
// give it, so a full-size variant needs a preview as large as the raw).
func previewRefusal(p *look.Preview, dw, dh int) string {
	if why := thumbnailRefusal(p.SourceW, p.SourceH); why != "" {
		return why
	}
	if pw, ph := p.Image.W, p.Image.H; pw < dw || ph < dh {
		return fmt.Sprintf("the embedded preview (%d×%d) is smaller than the variant (%d×%d)", pw, ph, dw, dh)
	}
	return ""
}

// thumbnailRefusal is why a preview of sw×sh pixels is no source (a
// thumbnail: MinPreviewSourceLong), "" when its size allows one.
func thumbnailRefusal(sw, sh int) string {
	if max(sw, sh) < MinPreviewSourceLong {
		return fmt.Sprintf("the embedded preview is a %d×%d thumbnail (a source needs a long edge of at least %d pixels)", sw, sh, MinPreviewSourceLong)
	}
	return ""
}

// PlannedSource is what a dry run can say, from the header alone, of the
// source of variant v of a file: "raw" or "preview" with the reason for
// a source=auto variant that falls back to the raw, or source "" when
// only the conversion can tell (the header does not give the preview's
// size: LibRaw did not open the file, or the file's tags omit it). err is
// how a source=preview variant would fail (wrapping
// a *NoPreviewError, as stagePreviewSource fails it). The header's
// preview size is the file's tags' (libraw.Info.PreviewWidth), which the
// conversion checks again against the decoded JPEG's frame.
func PlannedSource(fi FileInfo, v Variant, s Settings) (source, reason string, err error) {
	if v.Source == SourceRaw {
		return "raw", "", nil
	}
	why := ""
	h := fi.Header
	switch {
	case v.Source == SourceAuto && v.HDR != "":
		why = "an HDR variant needs the raw data (an embedded preview is an SDR picture)"
	case h == nil || !h.SizeFromLibRaw:
		return "", "", nil
	case h.Previews == 0:
		why = noPreviewReason
	case h.PreviewWidth <= 0 || h.PreviewHeight <= 0:
		return "", "", nil
	default:
		why = thumbnailRefusal(h.PreviewWidth, h.PreviewHeight)
		// Orientation-free: the header's output size is upright, the
		// preview stored as the sensor is.
		dw, dh := v.Fit(DecodedSize(fi, s))
		pl, ps := max(h.PreviewWidth, h.PreviewHeight), min(h.PreviewWidth, h.PreviewHeight)
		if why == "" && (pl < max(dw, dh) || ps < min(dw, dh)) {
			why = fmt.Sprintf("the embedded preview (%d×%d) is smaller than the variant (%d×%d)", h.PreviewWidth, h.PreviewHeight, dw, dh)
		}
	}
	switch {
	case why == "":
		return "preview", "", nil
	case v.Source == SourceAuto:
		return "raw", why, nil
	}
	return "", "", &NoPreviewError{Variant: v.Name, Reason: why}
}

// PlannedSources returns a copy of vs, the variants of a file described
// by fi, with every source=auto variant that the header says the embedded
// preview makes (PlannedSource: "preview") as source=preview: the sources
// the estimate and a dry run's plan count on. The conversion decides auto
// again from the decoded preview (resolveSources); when one falls back to
// the raw data, it needs the estimate without this prediction
// (Memory.Whole).
func PlannedSources(fi FileInfo, vs []Variant, s Settings) []Variant {
	out := slices.Clone(vs)
	for i, v := range out {
		if v.Source != SourceAuto {
			continue
		}
		if src, _, _ := PlannedSource(fi, v, s); src == "preview" {
			out[i].Source = SourcePreview
		}
	}
	return out
}

// autoFromPreview reports whether PlannedSources predicts the preview for
// any source=auto variant of vs.
func autoFromPreview(fi FileInfo, vs []Variant, s Settings) bool {
	for i, v := range PlannedSources(fi, vs, s) {
		if v.Source != vs[i].Source {
			return true
		}
	}
	return false
}

// resolveSources decides, once the file is open, which variants asked
// with source=auto are made from the embedded preview (it qualifies:
// previewRefusal) and which from the raw, and returns the plan for that
// choice (the open step kept, the rest planned again) and true; false
// when no variant asks for auto.
func (j *job) resolveSources(plan StagePlan, n int, asked []*variantJob) (StagePlan, bool) {
	vs := make([]Variant, len(asked))
	auto := false
	for i, v := range asked {
		vs[i] = v.spec.Variant
		if vs[i].Source != SourceAuto {
			continue
		}
		auto = true
		vs[i].Source = SourceRaw
		p, err := j.sourcePreview()
		why := ""
		if vs[i].hdrRendition() {
			why = "an HDR variant needs the raw data (an embedded preview is an SDR picture)"
		} else if err != nil {
			why = err.Error()
		} else {
			dw, dh := j.variantSize(vs[i])
			why = previewRefusal(p, dw, dh)
		}
		if why == "" {
			vs[i].Source = SourcePreview
		} else {
			v.source, v.sourceReason = "raw", why
		}
	}
	if !auto {
		return plan, false
	}
	again := PlanVariants(plan.W, plan.H, vs, j.settings)
	again.Steps = append(plan.Steps[:n+1:n+1], again.Steps[n+1:]...)
	j.orderOutputs(again, asked)
	return again, true
}
