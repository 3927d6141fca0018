package pipeline

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rawbatch/rawbatch/pipeline/header"
	"github.com/rawbatch/rawbatch/pipeline/internal/lensfun"
	"github.com/rawbatch/rawbatch/pipeline/lens"
	"github.com/rawbatch/rawbatch/pipeline/look"
)

// lensStage corrects the lens with lensfun (docs/lens.md): on the
// demosaiced linear camera RGB, after the DNG opcodes and highlights and
// before the camera matrix, vignetting (a gain per pixel), then
// distortion and transverse chromatic aberration in one remap through
// pipeline/warp (Keys bicubic) with lensfun's per-channel source
// positions, auto-scaled so that no empty corners remain. It runs after
// the stage cache point: the cached image is the uncorrected one, and the
// lens settings are in the settings hash, not the cache key.
var lensStage = Stage{Name: "lens", Scope: PerFile, Kind: Spatial, Linear: true, Cost: lensCost,
	Active: func(s Settings) bool { return s.lens() != LensOff }, run: stageLens,
	Band: lensBand}

// lensDBBytes is what loading lensfun's system database costs in memory:
// its parsed cameras and lenses and the library's pages (VmRSS grew by
// 3.7 MB at lensfun.Open on Debian 12's liblensfun-data-v1).
const lensDBBytes = 4 << 20

// lensCost: the image is corrected in place (lens.Correct), through the
// streamed conversion's filter: its copy of the rows the remap reads, the
// vignetting gains of every lens.Step-th row and the grid of nodes are
// scratch (lens.StreamBytes, which bounds the copy by lens.ShiftBound's
// displacement; for a fisheye, whose displacement is not bounded so, the
// copy is counted as large as the image). lensfun's database stays loaded
// once the step has loaded it (lensfun.Open shares one per process, so a
// worker's later files find it loaded): it is counted as held to the
// conversion's end, and its pages are not among those a later buffer
// could take over.
//
// lensfun's database is loaded only when there is a lens name to look up
// (stageLens): a file whose header names none (header.EXIF.Lens), without
// --lens-model, is counted without it. The filter's scratch stays counted,
// since LibRaw may still find a lens name when it opens the file.
func lensCost(m memCtx) StepMemory {
	w, h := m.step.W, m.step.H
	scratch := lens.StreamBytes(w, h, m.threads)
	if fisheyeNamed(lensNamed(m.fi.Header, m.s)) {
		scratch += max(0, 12*m.px()-lens.RingBytes(w, h))
	}
	if m.fi.Header != nil && strings.TrimSpace(m.fi.Header.EXIF.Lens) == "" && m.s.LensModel == "" {
		return StepMemory{Scratch: scratch}
	}
	return StepMemory{Scratch: scratch, Alloc: lensDBBytes}
}

// LensCorrection is what the lens stage did with a file (Result.Lens).
type LensCorrection struct {
	// Profile is the lensfun lens used ("Maker Model"); "" when none was.
	Profile Text `json:"profile,omitempty"`
	// Camera is the lensfun camera matched ("Maker Model"); "" when the
	// camera is not in the database.
	Camera Text `json:"camera,omitempty"`
	// LookedUp is the lens name looked up: --lens-model, else the file's
	// (EXIF LensModel, a maker note, or LibRaw's lens name).
	LookedUp Text `json:"looked_up,omitempty"`
	// Corrections are the corrections applied ("vignetting, distortion,
	// TCA"); "" when none.
	Corrections string `json:"corrections,omitempty"`
	// FocalLength (mm), Aperture (f-number) and Distance (m; 1000 when
	// the file does not say) the profile was interpolated at.
	FocalLength float64 `json:"focal_length_mm,omitempty"`
	Aperture    float64 `json:"aperture,omitempty"`
	Distance    float64 `json:"distance_m,omitempty"`
	// Scale is the auto-scale of the geometric corrections (> 1 enlarges,
	// so that no empty corners remain; 1 without geometric corrections).
	Scale float64 `json:"scale,omitempty"`
	// Reason says why nothing was corrected: "no lens profile",
	// "corrected by the DNG's opcodes", "no focal length", ...; or why
	// a correction of the profile was left out ("vignetting not
	// applied: gain ≤ 0 at the corners (from r = 0.80)").
	Reason Text `json:"reason,omitempty"`
}

// Summary is the correction in a few words, for the per-file line:
// "lens Rawbatch Barrel 24mm f/2.8", `no lens profile for "NAME"` (with
// why, when the camera is unknown), or the reason; "" for nil.
func (l *LensCorrection) Summary() string {
	switch {
	case l == nil:
		return ""
	case l.Profile != "" && l.Corrections != "":
		return "lens " + string(l.Profile)
	case strings.HasPrefix(string(l.Reason), "no lens profile") && l.LookedUp != "":
		// "no lens profile for "NAME"", and why when there is more to say
		// (the camera is not in the database).
		return fmt.Sprintf("no lens profile for %q", l.LookedUp) + strings.TrimPrefix(string(l.Reason), "no lens profile")
	}
	return string(l.Reason)
}

// lensLookup is what the stage looks up for a file: the camera makers and
// models to try (the file's EXIF, then LibRaw's names), the lens name and
// the shooting parameters.
type lensLookup struct {
	cameras                   [][2]string
	lens                      string
	focal, aperture, distance float64
}

// lensLookup gathers j's camera, lens and shooting parameters, --lens-model
// overriding the file's lens name.
func (j *job) lensLookup() lensLookup {
	var l lensLookup
	add := func(mk, md string) {
		mk, md = strings.TrimSpace(mk), strings.TrimSpace(md)
		if md == "" {
			return
		}
		for _, c := range l.cameras {
			if strings.EqualFold(c[0], mk) && strings.EqualFold(c[1], md) {
				return
			}
		}
		l.cameras = append(l.cameras, [2]string{mk, md})
	}
	if j.hdr != nil {
		add(j.hdr.EXIF.Make, j.hdr.EXIF.Model)
		l.lens, l.focal, l.aperture = j.hdr.EXIF.Lens, j.hdr.EXIF.FocalLength, j.hdr.EXIF.FNumber
	}
	add(j.info.Make, j.info.Model)
	if l.lens == "" {
		l.lens = j.info.Lens
	}
	if !(l.focal > 0) {
		l.focal = j.info.FocalLength
	}
	if !(l.aperture > 0) {
		l.aperture = j.info.Aperture
	}
	if j.settings.LensModel != "" {
		l.lens = j.settings.LensModel
	}
	l.lens = strings.TrimSpace(l.lens)
	l.distance = 1000 // the files read do not give the focus distance: infinity
	return l
}

// lensSetup is the lens stage's decision for a file (job.lensOpen): lc
// records it; m, when not nil, sets up the corrections to apply
// (m.Applied ≠ 0), made from db for lens on cam with the lookup lk.
type lensSetup struct {
	lc   *LensCorrection
	db   *lensfun.DB
	cam  *lensfun.Camera
	lens *lensfun.Lens
	lk   lensLookup
	m    *lensfun.Modifier
}

// close closes the modifier and the database (nil-safe).
func (st *lensSetup) close() {
	st.m.Close()
	st.db.Close()
}

// lensOpen looks j's camera and lens up in lensfun (opening its database
// only when there is a lens name) and sets up the corrections for an image
// of w×h pixels (the sensor's orientation, after the crop) of colors
// channels. It always returns a setup whose lc says what is done; st.m is
// nil when nothing is corrected (lc.Reason says why). Errors (wrapped
// "lens correction: ...") come from lensfun; the caller closes st.
func (j *job) lensOpen(w, h, colors int) (*lensSetup, error) {
	lc := &LensCorrection{}
	st := &lensSetup{lc: lc}
	if j.lensByOpcodes {
		lc.Reason = "corrected by the DNG's opcodes"
		return st, nil
	}
	if colors != 3 {
		lc.Reason = Text(fmt.Sprintf("%d colour channels", colors))
		return st, nil
	}
	lk := j.lensLookup()
	st.lk = lk
	lc.LookedUp = Text(lk.lens)
	if lk.lens == "" {
		// Nothing to look up: lensfun's database (about 0.1 s to load,
		// once per worker process) is not opened.
		lc.Reason = "no lens profile (the file names no lens)"
		return st, nil
	}
	var extra []string
	if j.settings.LensDB != "" {
		extra = append(extra, j.settings.LensDB)
	}
	db, err := lensfun.Open(extra...)
	if err != nil {
		return st, fmt.Errorf("lens correction: %w", err)
	}
	st.db = db
	var cam *lensfun.Camera
	for _, c := range lk.cameras {
		if cam, err = db.FindCamera(c[0], c[1]); err != nil {
			return st, fmt.Errorf("lens correction: %w", err)
		} else if cam != nil {
			break
		}
	}
	if cam != nil {
		lc.Camera = Text(strings.TrimSpace(cam.Maker + " " + cam.Model))
	}
	var lf *lensfun.Lens
	if cam != nil && lk.lens != "" {
		if lf, err = db.FindLens(cam, "", lk.lens); err != nil {
			return st, fmt.Errorf("lens correction: %w", err)
		}
	}
	if lf == nil {
		lc.Reason = Text(noLensReason(db, cam, lk.lens))
		if cam == nil && len(lk.cameras) > 0 {
			lc.Reason = "no lens profile (camera not in lensfun's database)"
		}
		if lk.lens == "" {
			lc.Reason = "no lens profile (the file names no lens)"
		}
		return st, nil
	}
	st.cam, st.lens = cam, lf
	lc.Profile = Text(lf.Name())
	if !(lk.focal > 0) {
		lc.Reason = "no focal length"
		return st, nil
	}
	lc.FocalLength, lc.Aperture, lc.Distance = lk.focal, lk.aperture, lk.distance
	m, err := db.NewModifier(lf, cam.CropFactor, w, h, lk.focal, lk.aperture, lk.distance,
		lensfun.Vignetting|lensfun.Distortion|lensfun.TCA, true)
	if err != nil {
		return st, fmt.Errorf("lens correction: %w", err)
	}
	lc.Scale = m.Scale
	if m.Applied == 0 {
		m.Close()
		lc.Reason = Text(fmt.Sprintf("the profile has no calibration at %g mm", lk.focal))
		return st, nil
	}
	st.m = m
	lc.Corrections = m.Applied.String()
	return st, nil
}

func stageLens(ctx context.Context, j *job) error {
	w, h := j.img.W, j.img.H
	st, err := j.lensOpen(w, h, j.colors)
	defer st.close()
	j.lens = st.lc
	if err != nil || st.m == nil {
		return err
	}
	m, lc := st.m, st.lc
	var gains []float32
	var gc int
	var ys []int
	if m.Applied&lensfun.Vignetting != 0 {
		gains, gc, ys, err = lens.NodeGainsCompact(m.Devignette, w, h)
		if err != nil {
			if !j.skipLensVignetting(lc, m.Applied, err) {
				return fmt.Errorf("lens correction: %w", err)
			}
			gains = nil
		} else if j.cfaGrid != nil {
			j.vignette = &anchorVignette{gains: gains, gc: gc, ys: ys, w: w, h: h}
		}
	}
	var g *lens.Nodes
	fix := m.Applied &^ lensfun.Vignetting
	if fix != 0 {
		if g, err = lens.NewNodes(w, h, m.Points); err != nil {
			return fmt.Errorf("lens correction: %w", err)
		}
	}
	// In place, through the streamed conversion's filter (lens.Correct).
	if err := lens.Correct(ctx, j.camera, w, h, gains, gc, ys, g); err != nil {
		return fmt.Errorf("lens correction: %w", err)
	}
	if fix == 0 || j.cfaGrid != nil {
		return nil // the anchor's cells are not warped: nor is the preview
	}
	if err := j.lensPreview(ctx, st.db, st.lens, st.cam.CropFactor, st.lk, fix); err != nil {
		return fmt.Errorf("lens correction of the embedded preview: %w", err)
	}
	return nil
}

// lensPreview gives the embedded preview, when one is kept (for the
// exposure anchor and the camera look, which compare it cell by cell with
// the camera image), the geometric corrections fix of the camera image:
// the same lensfun model at the preview's size, auto-scaled alike, so the
// two stay aligned (the scale and the distortion are relative to the
// image's size). Its vignetting is left as the camera rendered it.
func (j *job) lensPreview(ctx context.Context, db *lensfun.DB, lens *lensfun.Lens, crop float64, lk lensLookup, fix lensfun.Corrections) error {
	p := j.preview
	if p == nil || fix == 0 {
		return nil
	}
	fixed, ok, err := lensPreviewFixed(ctx, db, lens, crop, lk, fix, *p)
	if err != nil || !ok {
		return err
	}
	*p = fixed
	return nil
}

// lensPreviewFixed returns p with its reduced image and its score grid
// corrected as lensPreview corrects them (p itself is left as it was);
// ok false when p has no image to correct.
func lensPreviewFixed(ctx context.Context, db *lensfun.DB, lens *lensfun.Lens, crop float64, lk lensLookup, fix lensfun.Corrections, p look.Preview) (look.Preview, bool, error) {
	// Both the reduced preview and its score grid (Cells, which the
	// exposure anchor and the camera look compare) are corrected.
	if p.Image.W < 2 || p.Image.H < 2 || len(p.Image.Pix) != p.Image.W*p.Image.H*3 {
		return p, false, nil
	}
	if err := lensWarpImage(ctx, db, lens, crop, lk, fix, &p.Image); err != nil {
		return p, false, err
	}
	if p.Cells.W > 0 {
		cells, _, _ := look.Reduce(p.Image, p.Cells.W, p.Cells.H, 0)
		p.Cells = cells
	}
	return p, true, nil
}

// lensWarpImage puts img (W×H×3 float32) through the geometric corrections
// fix of the lens at img's size, auto-scaled as the camera image is, into
// a new pixel slice (img's may be shared).
func lensWarpImage(ctx context.Context, db *lensfun.DB, lf *lensfun.Lens, crop float64, lk lensLookup, fix lensfun.Corrections, img *look.Image) error {
	m, err := db.NewModifier(lf, crop, img.W, img.H, lk.focal, lk.aperture, lk.distance, fix, true)
	if err != nil {
		return err
	}
	defer m.Close()
	g, err := lens.NewNodes(img.W, img.H, m.Points)
	if err != nil {
		return err
	}
	out := slices.Clone(img.Pix)
	if err := lens.Correct(ctx, out, img.W, img.H, nil, 0, nil, g); err != nil {
		return err
	}
	img.Pix = out
	return nil
}

// lensIdle: the lens stage corrects nothing without looking lensfun up:
// the DNG's opcodes corrected the lens, or the file names no lens.
func lensIdle(j *job) bool {
	return j.lensByOpcodes || j.lensLookup().lens == ""
}

// lensMaxShift is the largest vertical displacement in upright rows (all
// channels) of a lens correction that streams, for an image whose longer
// side is long pixels (lens.ShiftBound; a variable for the tests): a
// larger one (a fisheye's, a very strong correction) converts the whole
// image.
var lensMaxShift = lens.ShiftBound

// lensShiftHook, when set (tests), is called with the displacement in
// rows (lens.ShiftRows) of each file the band form sets up.
var lensShiftHook func(rows int)

// lensBand is the lens stage's band form (Stage.Band): nothing to do
// (lensIdle) runs the stage at its turn; else lensfun is looked up and
// the corrections set up as stageLens sets them up, for the region in the
// sensor's frame, and computed into tables; the step streams when the
// displacement is at most lensMaxShift rows. The time taken here is the
// step's.
func lensBand(j *job, s *stream) (bandPrepare, bool) {
	if lensIdle(j) {
		return func(ctx context.Context, s *stream) error { return stageLens(ctx, s.j) }, true
	}
	t0 := time.Now()
	w, h := s.upright()
	b := lens.NewBand(w, h, s.flip)
	sw, sh := w, h
	if s.flip&4 != 0 {
		sw, sh = h, w
	}
	st, err := j.lensOpen(sw, sh, 3)
	defer st.close()
	if err != nil {
		return nil, false // the whole-image path fails with it
	}
	lc, applied := st.lc, lensfun.Corrections(0)
	if st.m != nil {
		applied = st.m.Applied
	}
	var skipped error // the vignetting not applied (implausible gains)
	var preview *look.Preview
	var vignette *anchorVignette
	// The anchor measures the CFA data: its cells get the vignetting
	// gains and neither they nor the preview the geometry.
	cfa := anchorFromCFA(j, sw, sh)
	if m := st.m; m != nil {
		if m.Applied&lensfun.Vignetting != 0 {
			gains, gc, ys, err := lens.NodeGainsCompact(m.Devignette, sw, sh)
			var bad *lens.ImplausibleVignetting
			switch {
			case errors.As(err, &bad):
				skipped = err
			case err != nil:
				return nil, false
			default:
				b.SetGains(gains, gc, ys)
				if cfa {
					vignette = &anchorVignette{gains: gains, gc: gc, ys: ys, w: sw, h: sh}
				}
			}
		}
		if fix := m.Applied &^ lensfun.Vignetting; fix != 0 {
			g, err := lens.NewNodes(sw, sh, m.Points)
			if err != nil {
				return nil, false
			}
			d, ok := b.SetGrid(g)
			if lensShiftHook != nil {
				lensShiftHook(d)
			}
			if !ok || d > lensMaxShift(max(w, h)) {
				return nil, false
			}
			if j.preview != nil && !cfa {
				p, ok, err := lensPreviewFixed(context.Background(), st.db, st.lens, st.cam.CropFactor, st.lk, fix, *j.preview)
				if err != nil {
					return nil, false
				}
				if ok {
					preview = &p
				}
			}
		}
	}
	setup := time.Since(t0)
	return func(_ context.Context, s *stream) error {
		j.lens = lc
		if skipped != nil {
			j.skipLensVignetting(lc, applied, skipped)
		}
		if preview != nil {
			*j.preview = *preview
		}
		j.vignette = vignette
		if b.Empty() {
			return nil
		}
		b.Start()
		s.addFilter(b.Lookahead(), b.Rows)
		s.filters[len(s.filters)-1].dur += setup
		return nil
	}, true
}

// lensStreamPredicted reports whether, as far as the header hd tells, the
// lens stage lets a file stream with settings s: no lens correction asked
// for, none named (EXIF LensModel, --lens-model), or a lens that is not a
// fisheye (whose correction moves rows farther than lensMaxShift: the
// name says "fisheye" or "fish-eye"). The estimate of a streamed file
// counts the lens's buffers (lensStreamBytes).
func lensStreamPredicted(hd *header.Header, s Settings) bool {
	if !lensStage.Active(s) {
		return true
	}
	return !fisheyeNamed(lensNamed(hd, s))
}

// fisheyeNamed reports whether the lens name says it is a fisheye
// ("fisheye" or "fish-eye", in any case).
func fisheyeNamed(name string) bool {
	name = strings.ToLower(name)
	return strings.Contains(name, "fisheye") || strings.Contains(name, "fish-eye")
}

// lensNamed is the lens name the header or the settings give: --lens-model,
// else the header's EXIF lens ("" when neither names one).
func lensNamed(hd *header.Header, s Settings) string {
	if s.LensModel != "" {
		return s.LensModel
	}
	if hd == nil {
		return ""
	}
	return strings.TrimSpace(hd.EXIF.Lens)
}

// lensStreamRows is the lens band form's lookahead that the estimate
// counts in the stream's window for a step of w×h pixels with settings s
// and header hd: lens.ShiftBound's rows and the kernel's 2 (0 when no lens
// is named: nothing is corrected).
func lensStreamRows(hd *header.Header, s Settings, w, h int) int {
	if !lensStage.Active(s) || lensNamed(hd, s) == "" {
		return 0
	}
	return lens.ShiftBound(max(w, h)) + 2
}

// lensStreamBytes is what the lens band form holds while the file streams,
// beyond the window's rows (lensStreamRows), for a step of w×h pixels:
// lens.StreamBytes and lensfun's database (lensDBBytes, loaded while the
// step is set up). 0 when no lens is named.
func lensStreamBytes(hd *header.Header, s Settings, w, h, threads int) int64 {
	if lensStreamRows(hd, s, w, h) == 0 {
		return 0
	}
	return lens.StreamBytes(w, h, threads) + lensDBBytes
}

// skipLensVignetting records in lc and the warnings that the profile's
// vignetting correction was not applied because of err (an
// *lens.ImplausibleVignetting); the other corrections of applied go on.
// It returns false, leaving everything as it was, for any other error.
func (j *job) skipLensVignetting(lc *LensCorrection, applied lensfun.Corrections, err error) bool {
	var bad *lens.ImplausibleVignetting
	if !errors.As(err, &bad) {
		return false
	}
	lc.Corrections = ""
	if rest := applied &^ lensfun.Vignetting; rest != 0 {
		lc.Corrections = rest.String()
	}
	note := "vignetting not applied: " + bad.Error()
	lc.Reason = Text(strings.TrimPrefix(string(lc.Reason)+"; "+note, "; "))
	j.warnings = append(j.warnings, fmt.Sprintf("lens correction (%s): %s", lc.Profile, note))
	return true
}

// noLensReason is Reason when lensfun has no lens named name for cam:
// "no lens profile", or, when a lens of that name exists but lensfun
// does not match it to cam, why: a lens profiled on a smaller sensor
// than cam's (a larger crop factor, by more than 1 %: lensfun does not
// use it on a larger sensor) gives "no lens profile (lensfun's NAME is
// profiled for crop factor 1.5, larger than the Canon EOS 6D's 1.0)";
// any other (a --lens-model for another camera's mount) "no lens
// profile (lensfun's NAME does not fit the Canon EF mount)".
func noLensReason(db *lensfun.DB, cam *lensfun.Camera, name string) string {
	if cam == nil || name == "" {
		return "no lens profile"
	}
	other, err := db.FindLens(nil, "", name)
	if err != nil || other == nil {
		return "no lens profile"
	}
	if cam.CropFactor > 0 && other.CropFactor > cam.CropFactor*1.01 {
		return fmt.Sprintf("no lens profile (lensfun's %s is profiled for crop factor %.1f, larger than the %s %s's %.1f)", other.Name(), other.CropFactor, cam.Maker, cam.Model, cam.CropFactor)
	}
	mount := "the camera's mount"
	if cam.Mount != "" {
		mount = "the " + cam.Mount + " mount"
	}
	return fmt.Sprintf("no lens profile (lensfun's %s does not fit %s)", other.Name(), mount)
}
