package pipeline

import (
	"context"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"

	"github.com/rawbatch/rawbatch/pipeline/internal/lensfun"
	"github.com/rawbatch/rawbatch/pipeline/internal/par"
	"github.com/rawbatch/rawbatch/pipeline/look"
	"github.com/rawbatch/rawbatch/pipeline/warp"
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
	Band: lensBand} // lens_band.go

// lensRemapRows is the number of rows remapped between checks for a cancel.
const lensRemapRows = 256

// lensDBBytes is what loading lensfun's system database costs in memory:
// its parsed cameras and lenses and the library's pages (VmRSS grew by
// 3.7 MB at lensfun.Open on Debian 12's liblensfun-data-v1).
const lensDBBytes = 4 << 20

// lensCost: the corrected image (W×H×3 float32) replaces the input, which
// is freed when the step ends; lensfun's database, the vignetting gains of
// every lensNodeStep-th row (W×3 float32 each) and the grid of nodes'
// positions (6 + 2 float32 a node) are scratch.
//
// lensfun's database is loaded only when there is a lens name to look up
// (stageLens): a file whose header names none (header.EXIF.Lens), without
// --lens-model, is counted without it. Its corrected copy stays counted,
// since LibRaw may still find a lens name when it opens the file.
func lensCost(m memCtx) StepMemory {
	db := int64(lensDBBytes)
	if m.fi.Header != nil && strings.TrimSpace(m.fi.Header.EXIF.Lens) == "" && m.s.LensModel == "" {
		db = 0
	}
	img := 12 * m.px()
	rows := int64(m.step.H/lensNodeStep + 2)
	gains := rows * int64(m.step.W) * 12
	nodes := int64(m.step.W/lensNodeStep+2) * rows * (6*4 + 2*4)
	return StepMemory{Scratch: db + gains + nodes, Alloc: img, Free: img}
}

// LensCorrection is what the lens stage did with a file (Result.Lens).
type LensCorrection struct {
	// Profile is the lensfun lens used ("Maker Model"); "" when none was.
	Profile string `json:",omitempty"`
	// Camera is the lensfun camera matched ("Maker Model"); "" when the
	// camera is not in the database.
	Camera string `json:",omitempty"`
	// LookedUp is the lens name looked up: --lens-model, else the file's
	// (EXIF LensModel, a maker note, or LibRaw's lens name).
	LookedUp string `json:",omitempty"`
	// Corrections are the corrections applied ("vignetting, distortion,
	// TCA"); "" when none.
	Corrections string `json:",omitempty"`
	// FocalLength (mm), Aperture (f-number) and Distance (m; 1000 when
	// the file does not say) the profile was interpolated at.
	FocalLength, Aperture, Distance float64 `json:",omitempty"`
	// Scale is the auto-scale of the geometric corrections (> 1 enlarges,
	// so that no empty corners remain; 1 without geometric corrections).
	Scale float64 `json:",omitempty"`
	// Reason says why nothing was corrected: "no lens profile",
	// "corrected by the DNG's opcodes", "no focal length", ...; or why
	// a correction of the profile was left out ("vignetting not
	// applied: gain ≤ 0 at the corners (from r = 0.80)").
	Reason string `json:",omitempty"`
}

// Summary is the correction in a few words, for the per-file line:
// "lens Rawbatch Barrel 24mm f/2.8", `no lens profile for "NAME"` (with
// why, when the camera is unknown), or the reason; "" for nil.
func (l *LensCorrection) Summary() string {
	switch {
	case l == nil:
		return ""
	case l.Profile != "" && l.Corrections != "":
		return "lens " + l.Profile
	case strings.HasPrefix(l.Reason, "no lens profile") && l.LookedUp != "":
		// "no lens profile for "NAME"", and why when there is more to say
		// (the camera is not in the database).
		return fmt.Sprintf("no lens profile for %q", l.LookedUp) + strings.TrimPrefix(l.Reason, "no lens profile")
	}
	return l.Reason
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
		lc.Reason = fmt.Sprintf("%d colour channels", colors)
		return st, nil
	}
	lk := j.lensLookup()
	st.lk = lk
	lc.LookedUp = lk.lens
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
		lc.Camera = strings.TrimSpace(cam.Maker + " " + cam.Model)
	}
	var lens *lensfun.Lens
	if cam != nil && lk.lens != "" {
		if lens, err = db.FindLens(cam, "", lk.lens); err != nil {
			return st, fmt.Errorf("lens correction: %w", err)
		}
	}
	if lens == nil {
		lc.Reason = noLensReason(db, cam, lk.lens)
		if cam == nil && len(lk.cameras) > 0 {
			lc.Reason = "no lens profile (camera not in lensfun's database)"
		}
		if lk.lens == "" {
			lc.Reason = "no lens profile (the file names no lens)"
		}
		return st, nil
	}
	st.cam, st.lens = cam, lens
	lc.Profile = lens.Name()
	if !(lk.focal > 0) {
		lc.Reason = "no focal length"
		return st, nil
	}
	lc.FocalLength, lc.Aperture, lc.Distance = lk.focal, lk.aperture, lk.distance
	m, err := db.NewModifier(lens, cam.CropFactor, w, h, lk.focal, lk.aperture, lk.distance,
		lensfun.Vignetting|lensfun.Distortion|lensfun.TCA, true)
	if err != nil {
		return st, fmt.Errorf("lens correction: %w", err)
	}
	lc.Scale = m.Scale
	if m.Applied == 0 {
		m.Close()
		lc.Reason = fmt.Sprintf("the profile has no calibration at %g mm", lk.focal)
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
	if m.Applied&lensfun.Vignetting != 0 {
		if err := lensDevignette(m.Devignette, j.camera, w, h); err != nil && !j.skipLensVignetting(lc, m.Applied, err) {
			return fmt.Errorf("lens correction: %w", err)
		}
	}
	if m.Applied&(lensfun.Distortion|lensfun.TCA) == 0 {
		return nil
	}
	out, err := lensRemap(ctx, j.camera, w, h, m.Points)
	if err != nil {
		return fmt.Errorf("lens correction: %w", err)
	}
	j.camera = out
	// The input is garbage now: give it back to the system before the
	// next steps allocate (the collector would return it only once they
	// have, and freed pages it keeps are not those a larger buffer takes),
	// so the peak stays the lens step's (lensCost;
	// TestEstimateCalibrationLensWhole).
	debug.FreeOSMemory()
	if err := j.lensPreview(ctx, st.db, st.lens, st.cam.CropFactor, st.lk, m.Applied&^lensfun.Vignetting); err != nil {
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
// fix of the lens at img's size, auto-scaled as the camera image is.
func lensWarpImage(ctx context.Context, db *lensfun.DB, lens *lensfun.Lens, crop float64, lk lensLookup, fix lensfun.Corrections, img *look.Image) error {
	m, err := db.NewModifier(lens, crop, img.W, img.H, lk.focal, lk.aperture, lk.distance, fix, true)
	if err != nil {
		return err
	}
	defer m.Close()
	out, err := lensRemap(ctx, img.Pix, img.W, img.H, m.Points)
	if err != nil {
		return err
	}
	img.Pix = out
	return nil
}

// lensNodeStep is the spacing in pixels of the grid of nodes at which
// lensfun computes the source positions; lensRemap interpolates them
// bilinearly in between. Distortion and TCA are smooth: the error of
// bilinear interpolation is at most step²/8 times the positions' second
// derivative, under 0.01 px for the profiles measured
// (TestLensNodePositions: 0.002 px on the EF 24-105, 0.009 px on the
// test profile's strong barrel), while lensfun's own per-pixel positions cost
// 36 ns a pixel (0.9 s on 24 MP, one thread: its handle is not shared).
const lensNodeStep = 8

// lensDevignette multiplies pix (w×h×3 float32) by lensfun's vignetting
// gains (devignette: lensfun.Modifier.Devignette). lensfun computes them
// on one thread, so they are taken on every lensNodeStep-th row (and the
// last), from a row of ones, and interpolated linearly in y between those
// rows while the image is multiplied in parallel; the gains are radial
// and smooth (a polynomial in r², lensfun's "pa" model), so the
// interpolation's error is under 0.05 % of the gain (TestLensDevignetteRows:
// 0.03 % at the corners of the EF 24-105 at 24 mm f/4, gain 6.3).
// A gain that is implausible on any node row (≤ 0, NaN, Inf or above
// dngopcode.MaxGain = 16: checkVignetteGains) leaves pix as it was and
// returns an *implausibleVignetting.
func lensDevignette(devignette func(pix []float32, y0, rows int) error, pix []float32, w, h int) error {
	gains, ys, err := lensNodeGains(devignette, w, h)
	if err != nil {
		return err
	}
	par.Rows(h, func(lo, hi int) {
		for y := lo; y < hi; y++ {
			k := 0
			if len(ys) > 1 {
				k = min(y/lensNodeStep, len(ys)-2)
			}
			k1 := min(k+1, len(ys)-1)
			t := float32(0)
			if ys[k1] > ys[k] {
				t = float32(y-ys[k]) / float32(ys[k1]-ys[k])
			}
			g0, g1 := gains[k*w*3:(k+1)*w*3], gains[k1*w*3:(k1+1)*w*3]
			row := pix[y*w*3 : (y+1)*w*3]
			for i := range row {
				row[i] *= g0[i] + t*(g1[i]-g0[i])
			}
		}
	})
	return nil
}

// lensNodeGains returns lensfun's vignetting gains (devignette:
// lensfun.Modifier.Devignette) of a w×h image on its node rows ys
// (nodeCoords: every lensNodeStep-th row and the last), w×3 float32 a
// row, from a row of ones; an *implausibleVignetting when a gain is
// implausible (checkVignetteGains), lensfun's error otherwise.
func lensNodeGains(devignette func(pix []float32, y0, rows int) error, w, h int) ([]float32, []int, error) {
	ys := nodeCoords(h)
	gains := make([]float32, len(ys)*w*3)
	for k, y := range ys {
		row := gains[k*w*3 : (k+1)*w*3]
		for i := range row {
			row[i] = 1
		}
		if err := devignette(row, y, 1); err != nil {
			return nil, nil, err
		}
	}
	if err := checkVignetteGains(gains, ys, w, h); err != nil {
		return nil, nil, err
	}
	return gains, ys, nil
}

// lensNodes is the grid of nodes of a w×h image: columns 0, step, 2·step,
// …, and w−1 (rows alike), with 6 float32 a node (x, y of red, green and
// blue in the uncorrected image) from points (lensfun.Modifier.Points).
type lensNodes struct {
	xs, ys []int // the nodes' columns and rows
	pos    []float32
	// kx, tx: for each column, the node to its left (its right one is
	// kx+1) and the fraction of the way to the right one.
	kx      []int32
	tx      []float32
	scratch sync.Pool // *[]float32: a row of nodes interpolated in y
}

func nodeCoords(n int) []int {
	var c []int
	for x := 0; x < n-1; x += lensNodeStep {
		c = append(c, x)
	}
	return append(c, n-1)
}

func newLensNodes(w, h int, points func(dst, xy []float32) error) (*lensNodes, error) {
	g := &lensNodes{xs: nodeCoords(w), ys: nodeCoords(h)}
	xy := make([]float32, 0, 2*len(g.xs)*len(g.ys))
	for _, y := range g.ys {
		for _, x := range g.xs {
			xy = append(xy, float32(x), float32(y))
		}
	}
	g.pos = make([]float32, 3*len(xy))
	if err := points(g.pos, xy); err != nil {
		return nil, err
	}
	if len(g.xs) == 1 {
		// A one-pixel-wide image: its one node twice.
		g.xs = append(g.xs, g.xs[0])
		pos := make([]float32, 0, 2*len(g.pos))
		for k := 0; k < len(g.ys); k++ {
			node := g.pos[k*6 : k*6+6]
			pos = append(append(pos, node...), node...)
		}
		g.pos = pos
	}
	nx := len(g.xs)
	g.kx, g.tx = make([]int32, w), make([]float32, w)
	for i := 0; i < w; i++ {
		k := min(i/lensNodeStep, nx-2)
		g.kx[i] = int32(k)
		if g.xs[k+1] > g.xs[k] {
			g.tx[i] = float32(i-g.xs[k]) / float32(g.xs[k+1]-g.xs[k])
		}
	}
	g.scratch.New = func() any { b := make([]float32, 4*nx); return &b }
	return g, nil
}

// row fills sx, sy with the interpolated source positions of channel ch
// for output row y: the node rows above and below are interpolated in y
// once, into scratch, then each pixel between its two nodes in x
// (precomputed columns: kx, tx).
func (g *lensNodes) row(y, ch int, sx, sy []float32) {
	j := 0
	if len(g.ys) > 1 {
		j = min(y/lensNodeStep, len(g.ys)-2)
	}
	j1 := min(j+1, len(g.ys)-1)
	ty := float32(0)
	if g.ys[j1] > g.ys[j] {
		ty = float32(y-g.ys[j]) / float32(g.ys[j1]-g.ys[j])
	}
	nx := len(g.xs)
	bp := g.scratch.Get().(*[]float32)
	defer g.scratch.Put(bp)
	if cap(*bp) < 4*nx {
		*bp = make([]float32, 4*nx)
	}
	// line[4k:4k+4]: node k's x, y, and the differences to node k+1's.
	line := (*bp)[:4*nx]
	r0, r1 := g.pos[j*nx*6:(j+1)*nx*6], g.pos[j1*nx*6:(j1+1)*nx*6]
	for k := 0; k < nx; k++ {
		a, b := r0[k*6+2*ch:k*6+2*ch+2], r1[k*6+2*ch:k*6+2*ch+2]
		n := line[4*k : 4*k+4 : 4*k+4]
		n[0] = a[0] + ty*(b[0]-a[0])
		n[1] = a[1] + ty*(b[1]-a[1])
		if k > 0 {
			line[4*k-2], line[4*k-1] = n[0]-line[4*k-4], n[1]-line[4*k-3]
		}
	}
	line[4*nx-2], line[4*nx-1] = 0, 0
	sy = sy[:len(sx)]
	kx, tx := g.kx[:len(sx)], g.tx[:len(sx)]
	for i, k := range kx {
		t := tx[i]
		a := line[4*k : 4*k+4 : 4*k+4]
		sx[i] = a[0] + t*a[2]
		sy[i] = a[1] + t*a[3]
	}
}

// lensRemap resamples src (w×h×3) through per-channel source positions
// that points (lensfun.Modifier.Points) gives at the grid of nodes
// (lensNodes), interpolated in between; the nodes are computed on the
// calling goroutine (lensfun's handles belong to its thread), the image is
// remapped by warp.RemapInto in parallel, band by band straight into the
// corrected image (so a cancel is seen).
func lensRemap(ctx context.Context, src []float32, w, h int, points func(dst, xy []float32) error) ([]float32, error) {
	g, err := newLensNodes(w, h, points)
	if err != nil {
		return nil, err
	}
	out := make([]float32, len(src))
	for y0 := 0; y0 < h; y0 += lensRemapRows {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		n := min(lensRemapRows, h-y0)
		warp.RemapInto(out[y0*w*3:(y0+n)*w*3], src, w, h, 3, w, n, func(y, ch int, sx, sy []float32) { g.row(y0+y, ch, sx, sy) })
	}
	return out, nil
}

// lensIdle: the lens stage corrects nothing without looking lensfun up:
// the DNG's opcodes corrected the lens, or the file names no lens.
func lensIdle(j *job) bool {
	return j.lensByOpcodes || j.lensLookup().lens == ""
}
