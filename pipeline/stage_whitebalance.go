package pipeline

import (
	"context"
	"fmt"
	"strings"

	"github.com/rawbatch/rawbatch/pipeline/colour"
	"github.com/rawbatch/rawbatch/pipeline/highlight"
	"github.com/rawbatch/rawbatch/pipeline/internal/libraw"
	"github.com/rawbatch/rawbatch/pipeline/look"
)

// whiteBalanceStage chooses the multipliers LibRaw applies to the CFA data
// before demosaic. For --wb camera: the as-shot multipliers when they are
// usable (highlight.AsShotUsable); otherwise the auto white balance of
// highlight.ChooseWB, estimated from the raw data (as the white-level stage
// left it), which keeps some warmth under tungsten. docs/highlights.md.
// Version 1: for a DNG, the camera model of the Temperature/Tint and auto
// white balances includes the file's AnalogBalance and CameraCalibration
// (cameraXYZ).
var whiteBalanceStage = Stage{Name: "white-balance", Scope: PerFile, Kind: Pointwise, Linear: true, Version: 1, Cost: whiteBalanceCost, run: stageWhiteBalance}

// whiteBalanceCost: with --wb camera on a mosaic sensor, the estimate from
// the raw data when the as-shot multipliers are unusable (which only the
// file's data tells): a copy of the raw data (2 bytes per photosite), one
// RGB float32 pixel per 4×4 photosites (CFAQuads, step 2: 0.75 bytes per
// photosite) and EstimateIlluminant's two brightness lists (0.5 bytes).
func whiteBalanceCost(m memCtx) StepMemory {
	if m.s.WhiteBalance.Mode != "camera" || !m.fi.CFA {
		return StepMemory{}
	}
	px := int64(m.fi.RawWidth) * int64(m.fi.RawHeight)
	return StepMemory{Scratch: px*2 + px*3/4 + px/2}
}

// WhiteBalanceUsed says which white balance a file was converted with, and
// why (Result.WhiteBalance, the report's white_balance).
type WhiteBalanceUsed struct {
	// Multipliers are the gains applied to camera R, G, B before demosaic,
	// relative to green (G = 1, dimensionless); zero when unknown (the
	// decoded image came from a stage cache entry stored without them).
	Multipliers [3]float64 `json:"multipliers"`
	// Source is where they come from: "as shot" (the file's multipliers),
	// "auto" (estimated from the raw data: highlight.AutoWB), "daylight"
	// (from the colour matrix), "grey world" (--wb auto: LibRaw's),
	// "custom" (--wb R,G,B) or "cached" (--wb camera without usable
	// as-shot multipliers, image read from a stage cache entry stored
	// without its white balance). On a stage cache hit it is the source
	// stored with the entry, and Reason ends with "from the stage cache".
	Source string `json:"source"`
	// Reason says why, for --wb camera: "as shot", or why the as-shot
	// multipliers were not used and what was done instead.
	Reason Text `json:"reason"`
	// EstimatedCCT and CorrectedCCT are, for Source "auto", the colour
	// temperature in kelvin of the estimated illuminant and the one made
	// neutral (highlight.CorrectedCCT); 0 otherwise.
	EstimatedCCT float64 `json:"estimated_cct_k,omitempty"`
	CorrectedCCT float64 `json:"corrected_cct_k,omitempty"`
}

func stageWhiteBalance(ctx context.Context, j *job) error {
	if err := chooseWhiteBalance(ctx, j); err != nil {
		return err
	}
	return j.checkWhiteBalance() // nonfinite.go
}

// chooseWhiteBalance sets j.wb and LibRaw's white-balance parameters.
func chooseWhiteBalance(_ context.Context, j *job) error {
	j.params = j.settings.librawParams()
	if j.cachedWhiteBalance() {
		return nil
	}
	if e := j.settings.Edit; e.Temperature > 0 {
		src := fmt.Sprintf("sidecar temperature %.0f K, tint %+.0f", e.Temperature, e.Tint)
		if m, ok := KelvinMultipliers(cameraXYZ(j.info), e.Temperature, e.Tint); ok {
			j.params.WB = libraw.WBUser
			j.params.Multipliers = [4]float32{float32(m[0]), 1, float32(m[2]), 1}
			j.wb = WhiteBalanceUsed{Source: "sidecar", Reason: Text(src), Multipliers: m}
			return nil
		}
		j.warnings = append(j.warnings, src+": the camera matrix gives no multipliers for it; --wb "+j.settings.WhiteBalance.String()+" used")
	}
	switch j.settings.WhiteBalance.Mode {
	case "camera":
	case "auto":
		j.wb = WhiteBalanceUsed{Source: "grey world", Reason: "--wb auto"}
		return nil
	case "custom":
		m := j.settings.WhiteBalance.Multipliers
		j.wb = WhiteBalanceUsed{Source: "custom", Reason: Text("--wb " + j.settings.WhiteBalance.String()),
			Multipliers: [3]float64{m[0] / m[1], 1, m[2] / m[1]}}
		return nil
	default:
		j.wb = WhiteBalanceUsed{Source: j.settings.WhiteBalance.Mode, Reason: Text("--wb " + j.settings.WhiteBalance.Mode)}
		return nil
	}
	camXYZ := cameraXYZ(j.info)
	if ok, why := highlight.AsShotUsable(j.info.CamMul); ok {
		m := j.info.CamMul
		j.wb = WhiteBalanceUsed{Source: "as shot", Reason: "as shot", Multipliers: [3]float64{m[0] / m[1], 1, m[2] / m[1]}}
		return nil
	} else if j.cached != nil {
		j.wb = WhiteBalanceUsed{Source: "cached", Reason: Text(why + "; the decoded image is from the stage cache, with the white balance chosen when it was stored")}
		return nil
	}
	_, why := highlight.AsShotUsable(j.info.CamMul)
	// The copy of the raw data and the grids (and the preview's decoding)
	// are garbage once the gains are chosen: collect them and give their
	// pages back to the system before LibRaw's processing allocates its
	// image (C memory cannot reuse Go's heap; runtime.GC alone leaves the
	// pages resident until the scavenger runs), so memory follows the
	// estimate (TestEstimateCalibration, the D30 CRW at half size).
	defer j.giveBack()
	defer func() { j.wbRaw = nil }()
	fit, note := j.previewWB()
	if note == "" {
		g := fit.Gains
		j.params.WB = libraw.WBUser
		j.params.Multipliers = [4]float32{float32(g[0]), 1, float32(g[2]), 1}
		j.wb = WhiteBalanceUsed{Source: "preview", Multipliers: [3]float64{g[0], 1, g[2]},
			Reason: Text(inParens("fitted to the embedded preview: "+why, fmt.Sprintf("residual %.3f over %d cells", fit.Residual, fit.Cells)))}
		j.warnings = append(j.warnings, j.wb.note())
		return nil
	}
	var illuminant func() ([3]float64, bool)
	if j.levels.ok {
		illuminant = j.rawIlluminant
	}
	wb := highlight.ChooseWB(j.info.CamMul, camXYZ, illuminant)
	if wb.Source == "daylight" {
		wb.Reason = daylightReason(why, j.info.HasColourMatrix(), illuminant != nil)
	}
	if wb.Source != "as shot" {
		wb.Reason += "; no preview fit: " + note
	}
	m := wb.Multipliers
	j.params.WB = libraw.WBUser
	j.params.Multipliers = [4]float32{float32(m[0]), float32(m[1]), float32(m[2]), float32(m[3])}
	j.wb = WhiteBalanceUsed{Source: wb.Source, Reason: Text(wb.Reason), Multipliers: [3]float64{m[0] / m[1], 1, m[2] / m[1]},
		EstimatedCCT: wb.EstimatedCCT, CorrectedCCT: wb.CorrectedCCT}
	j.warnings = append(j.warnings, j.wb.note())
	return nil
}

// note is the per-file warning of a --wb camera conversion that did not
// use the as-shot multipliers.
func (w WhiteBalanceUsed) note() string {
	s := fmt.Sprintf("R/G %.2f, B/G %.2f", w.Multipliers[0], w.Multipliers[2])
	if w.EstimatedCCT > 0 {
		s += fmt.Sprintf("; illuminant %.0f K, corrected to %.0f K", w.EstimatedCCT, w.CorrectedCCT)
	}
	return inParens("white balance "+string(w.Reason), s)
}

// rawIlluminant estimates the camera RGB of the illuminant from the
// unpacked raw data (highlight.CFAQuads every second quad,
// EstimateIlluminant), with the levels the white-level stage found.
func (j *job) rawIlluminant() ([3]float64, bool) {
	raw, w, h, err := j.copyRaw()
	if err != nil {
		return [3]float64{}, false
	}
	pat, err := j.h.CFAPattern(48, 48)
	if err != nil {
		return [3]float64{}, false
	}
	colour := func(r, c int) int { return int(pat[(r%48)*48+c%48]) }
	return highlight.EstimateIlluminant(highlight.CFAQuads(raw, w, h, colour, j.levels.black, j.levels.white, 2))
}

// copyRaw copies the unpacked raw data (W×H photosites, 16-bit) into the
// stage's one buffer, j.wbRaw, made on the first call.
func (j *job) copyRaw() ([]uint16, int, int, error) {
	raw, w, h, err := j.h.CopyRaw(j.wbRaw)
	if err == nil {
		j.wbRaw = raw
	}
	return raw, w, h, err
}

// appliedWB records the multipliers LibRaw applied (between Process and
// CopyImage), relative to green. Errors: one of them is not finite
// (corrupt: nonfinite.go).
func (j *job) appliedWB() error {
	m := j.h.AppliedMultipliers()
	if err := nonFinite("the white-balance multipliers LibRaw applied (from AsShotNeutral, tag 50728, the maker's white-balance tags or the colour matrix)", m[:]...); err != nil {
		return err
	}
	if m[1] > 0 {
		j.wb.Multipliers = [3]float64{m[0] / m[1], 1, m[2] / m[1]}
	}
	return nil
}

// whiteBalanceResult is the white balance for Result (nil when no
// white-balance step ran).
func (j *job) whiteBalanceResult() *WhiteBalanceUsed {
	if j.wb.Source == "" {
		return nil
	}
	w := j.wb
	return &w
}

// cameraXYZ returns the XYZ → camera RGB matrix of a file (rows R, G, B):
// the one LibRaw's rgb_cam and pre_mul imply for a DNG, else LibRaw's
// color.cam_xyz, else (zero there) the implied one again. dcraw's
// cam_xyz_coeff makes rgb_cam = (cam_rgb with rows normalised to sum 1)⁻¹
// and pre_mul_i = 1/(row sum i), with cam_rgb = cam_xyz · M(sRGB→XYZ); so
// cam_xyz = diag(1/pre_mul) · rgb_cam⁻¹ · M(XYZ→sRGB). Zero when neither
// is known.
//
// For a DNG LibRaw builds rgb_cam from the file's own AnalogBalance ·
// CameraCalibration · ColorMatrix (DNG 1.6 "Mapping Camera Color Space to
// CIE XYZ Space": XYZ → raw camera values, the space of AsShotNeutral,
// whose inverse is LibRaw's as-shot multipliers), while its cam_xyz, when
// set, is its own table's ColorMatrix for the model, without the file's
// AnalogBalance or calibration: multipliers computed from it would be off
// by the AnalogBalance (a 6D DNG whose AnalogBalance 2.16 1 1.41 carries
// the white balance came out magenta).
func cameraXYZ(in libraw.Info) [3][3]float64 {
	if in.DNGVersion != 0 {
		if m, ok := impliedCameraXYZ(in); ok {
			return m
		}
	}
	var m [3][3]float64
	for i := range 3 {
		m[i] = in.CamXYZ[i]
	}
	if m != ([3][3]float64{}) {
		return m
	}
	m, _ = impliedCameraXYZ(in)
	return m
}

// impliedCameraXYZ is the XYZ → camera RGB matrix LibRaw's rgb_cam and
// pre_mul imply (cameraXYZ); ok false when rgb_cam is singular or pre_mul
// not positive.
func impliedCameraXYZ(in libraw.Info) (m [3][3]float64, ok bool) {
	var rc colour.Mat3
	for i := range 3 {
		for k := range 3 {
			rc[i][k] = in.RGBCam[i][k]
		}
	}
	inv, ok := rc.Inverse()
	if !ok || !(in.PreMul[0] > 0 && in.PreMul[1] > 0 && in.PreMul[2] > 0) {
		return m, false
	}
	camXYZ := inv.Mul(colour.SRGB.FromXYZ)
	for i := range 3 {
		for k := range 3 {
			m[i][k] = camXYZ[i][k] / in.PreMul[i]
		}
	}
	return m, true
}

// maxPreviewWBResidual is the largest residual (RMS of ln R/G and ln B/G
// over the fit's cells, each capped at 0.5) of a white balance fitted to the
// preview that is used. Measured: the Canon D30 CRW against its own
// preview 0.29–0.30 (the camera renders colours more saturated than its
// colour matrix and through its own curve), a synthetic preview that skips
// the colour matrix 0.24 on a chart with colour patches; 0.35 keeps those
// with a margin, while a preview that does not show the raw's colours at
// all (another picture, a strongly styled one) sits near the cap.
const maxPreviewWBResidual = 0.35

// wbNeedsPreview reports whether the white-balance stage will fit the gains
// to the embedded preview: --wb camera and no usable as-shot multipliers,
// on a decode (not a stage cache hit).
func (j *job) wbNeedsPreview() bool {
	if j.settings.WhiteBalance.Mode != "camera" || j.cached != nil {
		return false
	}
	ok, _ := highlight.AsShotUsable(j.info.CamMul)
	return !ok
}

// previewWB fits the white-balance gains to the embedded preview
// (look.FitWB): the raw data as camera RGB, one pixel per Bayer quad
// (highlight.CFAQuads, every step-th so that it stays at least
// look.GridWidth wide), and the preview, both reduced to one grid; the
// model is the preview's linear space from white-balanced camera RGB
// (M(sRGB→space) · rgb_cam) and the inverse of look.DefaultCurve. It
// returns the fit, or why there is none ("" when there is).
func (j *job) previewWB() (look.WBFit, string) {
	in, note := j.previewWBInputs()
	if note != "" {
		return look.WBFit{}, note
	}
	fit, err := look.FitWB(in.cam, in.toSpace, in.cells, look.DefaultCurve, nil)
	if err != nil {
		return fit, err.Error()
	}
	if fit.Residual > maxPreviewWBResidual {
		return fit, fmt.Sprintf("the preview does not match the raw (residual %.3f, over %g)", fit.Residual, maxPreviewWBResidual)
	}
	return fit, ""
}

// wbInputs are previewWB's grids and model (look.FitWB's arguments).
type wbInputs struct {
	cam     look.Image
	toSpace colour.Mat3
	cells   look.Cells
}

// previewWBInputs builds previewWB's grids, or says why it cannot.
func (j *job) previewWBInputs() (wbInputs, string) {
	p := j.preview
	switch {
	case p == nil && j.previewNote != "":
		return wbInputs{}, j.previewNote
	case p == nil:
		return wbInputs{}, "no embedded preview"
	case !j.levels.ok:
		return wbInputs{}, "no mosaic data"
	}
	raw, w, h, err := j.copyRaw()
	if err != nil {
		return wbInputs{}, err.Error()
	}
	pat, err := j.h.CFAPattern(48, 48)
	if err != nil {
		return wbInputs{}, err.Error()
	}
	colourOf := func(r, c int) int { return int(pat[(r%48)*48+c%48]) }
	step := max(1, w/(4*look.GridWidth))
	quads := highlight.CFAQuads(raw, w, h, colourOf, j.levels.black, j.levels.white, step)
	qw, qh := (w-1+2*step-1)/(2*step), (h-1+2*step-1)/(2*step)
	if qw <= 0 || qh <= 0 || len(quads) != 3*qw*qh {
		return wbInputs{}, "not a Bayer mosaic"
	}
	gw, gh := look.GridSize(qw, qh, min(look.GridWidth, p.Image.W))
	if gh > p.Image.H || gh > qh {
		return wbInputs{}, "the preview is too small for the grid"
	}
	cam, clipped, err := look.Reduce(look.Image{W: qw, H: qh, Pix: quads}, gw, gh, 0.95)
	if err != nil {
		return wbInputs{}, err.Error()
	}
	prev, err := p.Grid(gw, gh)
	if err != nil {
		return wbInputs{}, err.Error()
	}
	var rgbCam colour.Mat3
	for i := range 3 {
		for k := range 3 {
			rgbCam[i][k] = j.info.RGBCam[i][k]
		}
	}
	toSpace := colour.ConvertMatrix(colour.SRGB, p.Space).Mul(rgbCam)
	return wbInputs{cam: cam, toSpace: toSpace, cells: look.Cells{Preview: prev, Clipped: clipped, Lum: p.Space.ToXYZ[1], Threads: j.threads}}, ""
}

// inParens adds extra to s in parentheses, inside the parenthesis s already
// ends with if it does ("a (b)" + "c" → "a (b; c)", "a" + "c" → "a (c)"),
// so that the white balance's messages never stack parentheses.
func inParens(s, extra string) string {
	if strings.HasSuffix(s, ")") {
		return s[:len(s)-1] + "; " + extra + ")"
	}
	return s + " (" + extra + ")"
}

// daylightReason is the reason of the white balance highlight.ChooseWB
// falls back to last, daylight: why (the as-shot multipliers were not
// used), and what the daylight white came from: the camera's colour
// matrix, or, where LibRaw has none (hasMatrix false), camera RGB taken as
// sRGB (the identity matrix the conversion uses); and why there was no
// estimate from the picture: no mosaic data to estimate it from
// (estimated false), or none found in it.
func daylightReason(why string, hasMatrix, estimated bool) string {
	s := "daylight from the colour matrix: "
	if !hasMatrix {
		s = "daylight for camera RGB taken as sRGB (no colour matrix for this camera): "
	}
	s += why
	if estimated {
		return s + ", and the picture gives no estimate"
	}
	return s + ", and there is no mosaic data to estimate it from"
}
