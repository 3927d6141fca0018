// Package lensfun is rawbatch's small binding to lensfun's C API (Debian:
// liblensfun-dev 0.3.3, its database liblensfun-data-v1), linked through
// pkg-config as lensfun. It looks cameras and lenses up in lensfun's XML
// database and computes, for one image, lensfun's vignetting gains and the
// per-channel source coordinates of its distortion and transverse
// chromatic aberration (TCA) corrections; the resampling itself is
// pipeline/warp's.
//
// Rules kept here, as in pipeline/internal/libraw:
//   - one owner per handle: a DB and the Modifiers made from it are
//     created, used and closed by one goroutine on one locked OS thread
//     (every call checks the thread id and refuses others);
//   - the lensfun database behind the handles is loaded once per process
//     for each set of extra directories (about 40 ms and 4 MB; a worker
//     process converts many files) and shared by the handles Open returns:
//     lfDatabase is read-only once loaded, and each shared database's
//     lookups (lf_db_find_*, lf_modifier_new on its lenses) run under its
//     own mutex, so handles on several threads may use it at once; it is
//     destroyed by CloseShared (explicitly, at a worker's exit), or when
//     its directories' files changed and its last handle closes;
//   - explicit Close, no finalizers; C keeps no Go pointer: pixel and
//     coordinate buffers are Go memory lent for the duration of one call;
//   - every C allocation is freed by a defer next to its creation (C
//     strings, the lists lf_db_find_* return), or by Close for the
//     handle's own;
//   - lensfun's return codes become Go errors in one place (errors.go).
//
// A Camera, Lens or Modifier points into its DB: it is valid until the
// DB's Close, which closes the Modifiers still open.
package lensfun

/*
#cgo pkg-config: lensfun glib-2.0
#include <stdlib.h>
#include "rb_lensfun.h"
*/
import "C"

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"unicode"
	"unsafe"
)

// loadMu serialises loading and destroying databases within the process:
// lensfun 0.3.3's loader is not thread-safe (it switches the process's
// LC_NUMERIC locale while it parses, and GLib's markup parser with it);
// two files converted at once in one process crashed in lf_db_load
// (TestParallelOpen).
var loadMu sync.Mutex

// quiet installs, once, the GLib log handler that keeps lensfun's
// messages from stderr (rb_lf_log).
var quiet sync.Once

// beQuiet installs the log handler (quiet), once.
func beQuiet() { quiet.Do(func() { C.rb_lf_quiet() }) }

// lastMessage returns and clears the calling thread's last lensfun
// message ("" if none).
func lastMessage() string {
	s := C.GoString(C.rb_lf_take_log())
	C.rb_lf_clear_log()
	return s
}

// Corrections is a set of lensfun's corrections (LF_MODIFY_*).
type Corrections int

const (
	// TCA: transverse chromatic aberration (red and blue planes moved
	// radially against green).
	TCA Corrections = C.LF_MODIFY_TCA
	// Vignetting: the radial fall-off of brightness.
	Vignetting Corrections = C.LF_MODIFY_VIGNETTING
	// Distortion: radial geometric distortion (barrel, pincushion).
	Distortion Corrections = C.LF_MODIFY_DISTORTION
)

func (c Corrections) String() string {
	var s string
	for _, p := range []struct {
		f    Corrections
		name string
	}{{Vignetting, "vignetting"}, {Distortion, "distortion"}, {TCA, "TCA"}} {
		if c&p.f != 0 {
			if s != "" {
				s += ", "
			}
			s += p.name
		}
	}
	if s == "" {
		return "none"
	}
	return s
}

// DB is a handle on a loaded lensfun database (lfDatabase), shared with
// the other handles of the same extra directories.
type DB struct {
	db   *C.lfDatabase
	l    *loaded
	tid  C.long
	mods []*Modifier
}

// loaded is a database loaded by Open, shared by its handles.
type loaded struct {
	db *C.lfDatabase
	// mu serialises the lookups of the handles sharing db.
	mu sync.Mutex
	// files identifies the extra directories' XML files it was loaded
	// from (names, sizes, modification times).
	files string
	// refs counts its open handles; stale: replaced by a load of changed
	// files, destroyed when refs drops to 0.
	refs  int
	stale bool
}

// shared holds the loaded databases by their extra directories, under
// loadMu.
var shared = map[string]*loaded{}

// loads counts the databases loaded (tests).
var loads int

// Open returns a handle on lensfun's system database (its version_1 XML
// files under /usr/share/lensfun; lf_db_load) with every *.xml file of
// each directory of extra added, in name order (lf_db_load_file), so their
// cameras and lenses are found too (an extra entry for an existing lens
// adds to it). The database is loaded on the first Open of these
// directories in the process and shared by the later ones (loaded again
// when their XML files changed: names, sizes, modification times). It
// must be called on a locked OS thread, which then owns the handle.
// Errors name the file and wrap ErrNoDatabase (the system database is
// missing and no extra directory was given), ErrFormat (a file is not a
// lensfun database), or the os error of an unreadable directory.
func Open(extra ...string) (*DB, error) {
	beQuiet()
	dirs := strings.Join(extra, "\x00")
	var names []string
	var files strings.Builder
	for _, dir := range extra {
		ns, err := XMLFiles(dir)
		if err != nil {
			return nil, err
		}
		for _, name := range ns {
			fmt.Fprintf(&files, "%s\x00", name)
			if fi, err := os.Stat(name); err == nil {
				fmt.Fprintf(&files, "%d\x00%d\x00", fi.Size(), fi.ModTime().UnixNano())
			}
		}
		names = append(names, ns...)
	}
	loadMu.Lock()
	defer loadMu.Unlock()
	l := shared[dirs]
	if l == nil || l.files != files.String() {
		db, err := load(names, len(extra) > 0)
		if err != nil {
			return nil, err
		}
		if l != nil {
			l.stale = true
			if l.refs == 0 {
				C.lf_db_destroy(l.db)
			}
		}
		l = &loaded{db: db, files: files.String()}
		shared[dirs] = l
	}
	l.refs++
	return &DB{db: l.db, l: l, tid: C.rb_lf_gettid()}, nil
}

// load loads the system database and the XML files names into a new
// database (loadMu held); without extra directories (extra false) a
// missing system database is an error.
func load(names []string, extra bool) (*C.lfDatabase, error) {
	C.rb_lf_clear_log()
	db := C.lf_db_new()
	if db == nil {
		return nil, fmt.Errorf("lensfun: lf_db_new failed")
	}
	loads++
	sysErr := dbError("the system database", C.lf_db_load(db))
	if sysErr != nil && !extra {
		C.lf_db_destroy(db)
		return nil, sysErr
	}
	for _, name := range names {
		if err := loadFile(db, name); err != nil {
			C.lf_db_destroy(db)
			return nil, err
		}
	}
	return db, nil
}

// CloseShared destroys the loaded databases that no handle uses (a
// worker process calls it as it exits); those in use are left, and it
// says how many.
func CloseShared() error {
	loadMu.Lock()
	defer loadMu.Unlock()
	busy := 0
	for k, l := range shared {
		if l.refs > 0 {
			busy++
			continue
		}
		C.lf_db_destroy(l.db)
		delete(shared, k)
	}
	if busy > 0 {
		return fmt.Errorf("lensfun: %d databases still in use", busy)
	}
	return nil
}

// loadFile loads the lensfun XML file name into db (lf_db_load_file);
// errors as dbError's.
func loadFile(db *C.lfDatabase, name string) error {
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	return dbError(name, C.lf_db_load_file(db, cs))
}

// Close destroys every Modifier still open and releases the handle (the
// shared database stays loaded: CloseShared); nil-safe and idempotent. It
// must run on the owner's thread: from another one it refuses with an
// error and destroys nothing.
func (d *DB) Close() error {
	if d == nil || d.db == nil {
		return nil
	}
	if err := d.check("close"); err != nil {
		return err
	}
	loadMu.Lock()
	defer loadMu.Unlock()
	d.closeLocked()
	return nil
}

// closeLocked is Close with loadMu held.
func (d *DB) closeLocked() {
	for _, m := range d.mods {
		m.destroy()
	}
	d.mods = nil
	d.l.refs--
	if d.l.stale && d.l.refs == 0 {
		C.lf_db_destroy(d.l.db)
	}
	d.db = nil
}

// check refuses a call from another thread than the owner's, or on a
// closed DB.
func (d *DB) check(op string) error {
	if d == nil || d.db == nil {
		return fmt.Errorf("lensfun: %s: database closed", op)
	}
	if t := C.rb_lf_gettid(); t != d.tid {
		return fmt.Errorf("lensfun: %s: called on OS thread %d, the database belongs to thread %d", op, t, d.tid)
	}
	return nil
}

// Camera is a camera of the database.
type Camera struct {
	Maker, Model, Variant, Mount string
	// CropFactor is the sensor's crop factor: 43.27 mm (the diagonal of
	// 36×24 mm) over the sensor's diagonal.
	CropFactor float64
	c          *C.lfCamera
}

// FindCamera returns the database's best match for the EXIF maker and
// model (lf_db_find_cameras: case and spacing ignored), or nil when it
// knows no such camera.
func (d *DB) FindCamera(maker, model string) (*Camera, error) {
	if err := d.check("find camera"); err != nil {
		return nil, err
	}
	cmk, cmd := cstr(maker), cstr(model)
	defer C.free(unsafe.Pointer(cmk))
	defer C.free(unsafe.Pointer(cmd))
	d.l.mu.Lock()
	defer d.l.mu.Unlock()
	list := C.lf_db_find_cameras(d.db, cmk, cmd)
	defer C.lf_free(unsafe.Pointer(list))
	if list == nil || C.rb_lf_cam_at(list, 0) == nil {
		return nil, nil
	}
	c := C.rb_lf_cam_at(list, 0)
	return &Camera{Maker: mlstr(c.Maker), Model: mlstr(c.Model), Variant: mlstr(c.Variant),
		Mount: C.GoString(c.Mount), CropFactor: float64(c.CropFactor), c: (*C.lfCamera)(unsafe.Pointer(c))}, nil
}

// Lens is a lens of the database with what it is calibrated for.
type Lens struct {
	Maker, Model string
	// MinFocal, MaxFocal: the focal range in mm; CropFactor and
	// AspectRatio of the sensor it was calibrated on.
	MinFocal, MaxFocal, CropFactor, AspectRatio float64
	// Score is lensfun's match score (higher is better).
	Score int
	// Has are the corrections the lens has calibrations for.
	Has Corrections
	l   *C.lfLens
}

// Name is the lens as "Maker Model" (Model alone when it starts with
// Maker or there is none).
func (l *Lens) Name() string {
	if l.Maker == "" || len(l.Model) >= len(l.Maker) && l.Model[:len(l.Maker)] == l.Maker {
		return l.Model
	}
	return l.Maker + " " + l.Model
}

// FindLens returns lensfun's best match for the lens named model (EXIF
// LensModel or a maker-note lens name; maker may be "") that fits cam's
// mount (cam may be nil: any mount), or nil when none matches
// (lf_db_find_lenses_hd, sorted by score).
func (d *DB) FindLens(cam *Camera, maker, model string) (*Lens, error) {
	if err := d.check("find lens"); err != nil {
		return nil, err
	}
	if model == "" {
		return nil, nil
	}
	var cc *C.lfCamera
	if cam != nil {
		cc = cam.c
	}
	cmk, cmd := cstr(maker), cstr(model)
	defer C.free(unsafe.Pointer(cmk))
	defer C.free(unsafe.Pointer(cmd))
	d.l.mu.Lock()
	defer d.l.mu.Unlock()
	list := C.lf_db_find_lenses_hd(d.db, cc, cmk, cmd, C.LF_SEARCH_SORT_AND_UNIQUIFY)
	defer C.lf_free(unsafe.Pointer(list))
	if list == nil || C.rb_lf_lens_at(list, 0) == nil {
		return nil, nil
	}
	// lensfun scores "EF24-105mm f/4L IS USM" the same for the IS USM
	// and the IS II USM: prefer the candidate whose name is the one looked
	// up, spacing, case and the maker's name aside; else lensfun's best.
	l := C.rb_lf_lens_at(list, 0)
	want := squash(model)
	for i := 0; C.rb_lf_lens_at(list, C.int(i)) != nil; i++ {
		c := C.rb_lf_lens_at(list, C.int(i))
		mk, md := squash(mlstr(c.Maker)), squash(mlstr(c.Model))
		if md == want || strings.TrimPrefix(md, mk) == want || strings.TrimPrefix(want, mk) == strings.TrimPrefix(md, mk) {
			l = c
			break
		}
	}
	var nd, nt, nv C.int
	C.rb_lf_counts(l, &nd, &nt, &nv)
	out := &Lens{Maker: mlstr(l.Maker), Model: mlstr(l.Model), MinFocal: float64(l.MinFocal), MaxFocal: float64(l.MaxFocal),
		CropFactor: float64(l.CropFactor), AspectRatio: float64(l.AspectRatio), Score: int(l.Score), l: (*C.lfLens)(unsafe.Pointer(l))}
	if nd > 0 {
		out.Has |= Distortion
	}
	if nt > 0 {
		out.Has |= TCA
	}
	if nv > 0 {
		out.Has |= Vignetting
	}
	return out, nil
}

// Modifier computes one image's corrections (lfModifier).
type Modifier struct {
	d    *DB
	m    *C.lfModifier
	w, h int
	// Applied are the corrections lensfun set up (those asked for that
	// the lens has calibrations for at the focal length).
	Applied Corrections
	// Scale is the auto-scale applied with the geometric corrections so
	// that no output pixel maps outside the image (1: none; > 1 enlarges:
	// lf_modifier_get_auto_scale).
	Scale float64
}

// NewModifier sets up lens's corrections want for a w×h image (pixels, as
// stored: the sensor's orientation) taken with a camera of crop factor
// crop at focal length focal (mm), aperture (f-number) and focus distance
// (m), correcting the image (lensfun's forward direction). With autoScale
// and a geometric correction, the geometry is scaled about the centre so
// that no output pixel maps outside the image (no empty corners). The
// Modifier belongs to d and is closed by d.Close at the latest.
func (d *DB) NewModifier(lens *Lens, crop float64, w, h int, focal, aperture, distance float64, want Corrections, autoScale bool) (*Modifier, error) {
	if err := d.check("new modifier"); err != nil {
		return nil, err
	}
	if lens == nil || w < 2 || h < 2 || !(crop > 0) || !(focal > 0) {
		return nil, fmt.Errorf("lensfun: new modifier: bad arguments (lens %v, %d×%d, crop %g, focal %g mm)", lens != nil, w, h, crop, focal)
	}
	// The modifier reads the shared lens's calibrations as it is set up.
	d.l.mu.Lock()
	defer d.l.mu.Unlock()
	cm := C.lf_modifier_new(lens.l, C.float(crop), C.int(w), C.int(h))
	if cm == nil {
		return nil, fmt.Errorf("lensfun: lf_modifier_new failed")
	}
	m := &Modifier{d: d, m: cm, w: w, h: h, Scale: 1}
	d.mods = append(d.mods, m)
	got := C.lf_modifier_initialize(cm, lens.l, C.LF_PF_F32, C.float(focal), C.float(aperture), C.float(distance),
		1, C.LF_RECTILINEAR, C.int(want), 0)
	m.Applied = Corrections(got) & want
	if autoScale && m.Applied&(Distortion|TCA) != 0 {
		if s := float64(C.lf_modifier_get_auto_scale(cm, 0)); s > 0 && s != 1 {
			C.lf_modifier_add_coord_callback_scale(cm, C.float(s), 0)
			m.Scale = s
		}
	}
	return m, nil
}

// Close destroys the modifier; nil-safe and idempotent. It must run on the
// DB owner's thread: from another one it refuses with an error.
func (m *Modifier) Close() error {
	if m == nil || m.m == nil {
		return nil
	}
	if err := m.d.check("close modifier"); err != nil {
		return err
	}
	for i, o := range m.d.mods {
		if o == m {
			m.d.mods = append(m.d.mods[:i], m.d.mods[i+1:]...)
			break
		}
	}
	m.destroy()
	return nil
}

func (m *Modifier) destroy() {
	if m.m != nil {
		C.lf_modifier_destroy(m.m)
		m.m = nil
	}
}

func (m *Modifier) check(op string) error {
	if m == nil || m.m == nil {
		return fmt.Errorf("lensfun: %s: modifier closed", op)
	}
	return m.d.check(op)
}

// Devignette multiplies rows y0 … y0+rows−1 of the image (pix: those rows,
// W×rows×3 float32 RGB interleaved, linear light) by lensfun's
// vignetting gains, in place. It does nothing without Vignetting in
// Applied.
func (m *Modifier) Devignette(pix []float32, y0, rows int) error {
	if err := m.check("devignette"); err != nil {
		return err
	}
	if m.Applied&Vignetting == 0 || rows == 0 {
		return nil
	}
	if y0 < 0 || rows < 0 || y0+rows > m.h || len(pix) != m.w*rows*3 {
		return fmt.Errorf("lensfun: devignette: %d values for rows %d..%d of %d×%d×3", len(pix), y0, y0+rows, m.w, m.h)
	}
	if C.lf_modifier_apply_color_modification(m.m, unsafe.Pointer(&pix[0]), 0, C.float(y0), C.int(m.w), C.int(rows),
		C.rb_lf_rgb_role(), C.int(m.w*3*4)) == 0 {
		return applyError("vignetting")
	}
	return nil
}

// Coordinates fills dst (W×rows×6 float32) with, for every output pixel
// of rows y0 … y0+rows−1, the source positions (x, y) of its red, green
// and blue values in the uncorrected image, in pixels with pixel centres
// at integers (lf_modifier_apply_subpixel_geometry_distortion; the
// auto-scale included). Without Distortion or TCA in Applied the
// positions are the pixels' own.
func (m *Modifier) Coordinates(dst []float32, y0, rows int) error {
	if err := m.check("coordinates"); err != nil {
		return err
	}
	if y0 < 0 || rows < 0 || y0+rows > m.h || len(dst) != m.w*rows*6 {
		return fmt.Errorf("lensfun: coordinates: %d values for rows %d..%d of %d×%d×6", len(dst), y0, y0+rows, m.w, m.h)
	}
	if rows == 0 {
		return nil
	}
	if m.Applied&(Distortion|TCA) == 0 {
		for r := 0; r < rows; r++ {
			for x := 0; x < m.w; x++ {
				p := dst[(r*m.w+x)*6:]
				for c := 0; c < 3; c++ {
					p[2*c], p[2*c+1] = float32(x), float32(y0+r)
				}
			}
		}
		return nil
	}
	if C.rb_lf_subpixel_rows(m.m, C.float(y0), C.int(m.w), C.int(rows), (*C.float)(unsafe.Pointer(&dst[0]))) == 0 {
		return applyError("geometry")
	}
	return nil
}

// Points fills dst (6 float32 a point) with the source positions (x, y of
// red, green and blue, as Coordinates gives them) of the output points xy
// (x0, y0, x1, y1, ...: pixels, centres at integers, anywhere in or at the
// edge of the image). It lets a caller evaluate the correction on a coarse
// grid of nodes and interpolate between them.
func (m *Modifier) Points(dst, xy []float32) error {
	if err := m.check("points"); err != nil {
		return err
	}
	n := len(xy) / 2
	if len(xy)%2 != 0 || len(dst) != n*6 {
		return fmt.Errorf("lensfun: points: %d values for %d coordinates", len(dst), len(xy))
	}
	if n == 0 {
		return nil
	}
	if m.Applied&(Distortion|TCA) == 0 {
		for i := 0; i < n; i++ {
			for c := 0; c < 3; c++ {
				dst[6*i+2*c], dst[6*i+2*c+1] = xy[2*i], xy[2*i+1]
			}
		}
		return nil
	}
	if C.rb_lf_subpixel_points(m.m, (*C.float)(unsafe.Pointer(&xy[0])), C.int(n), (*C.float)(unsafe.Pointer(&dst[0]))) == 0 {
		return applyError("geometry")
	}
	return nil
}

// squash is s in lower case without spaces, for comparing lens names.
func squash(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return -1
		}
		return unicode.ToLower(r)
	}, s)
}

// cstr is s as a C string, or NULL for "" (lensfun's "any").
func cstr(s string) *C.char {
	if s == "" {
		return nil
	}
	return C.CString(s)
}

// mlstr is the default (untranslated) value of a lensfun multi-language
// string.
func mlstr(s C.lfMLstr) string {
	if s == nil {
		return ""
	}
	return C.GoString(C.lf_mlstr_get(s))
}
