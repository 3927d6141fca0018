package pipeline

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/rawbatch/rawbatch/pipeline/colour"
	"github.com/rawbatch/rawbatch/pipeline/encode"
	"github.com/rawbatch/rawbatch/pipeline/header"
	"github.com/rawbatch/rawbatch/pipeline/internal/fault"
	"github.com/rawbatch/rawbatch/pipeline/internal/libraw"
	"github.com/rawbatch/rawbatch/pipeline/internal/par"
	"github.com/rawbatch/rawbatch/pipeline/rawerr"
)

// WorkingSpace is the linear RGB space of stages 2 and 3: ITU-R BT.2020
// primaries, D65 white, scene-referred linear. It holds every colour a
// camera matrix produces for real scenes without negative values in most
// cases.
var WorkingSpace = colour.Rec2020

// Stage is one step of the conversion of a file. The stages of a conversion
// are Stages, run in order on one goroutine locked to its OS thread (the
// LibRaw handle must stay on one thread).
type Stage struct {
	Name string
	run  func(ctx context.Context, j *job) error
	// perVariant stages run once per output variant, on the variant's
	// own buffers; the others run once per file.
	perVariant bool
}

// Stages is the pipeline, in order. Stage 1 (decode) is LibRaw's; the rest
// is rawbatch's own code working on W×H×3 float32 images. Formulas and
// sources: docs/pipeline.md.
var Stages = []Stage{
	{"open", stageOpen, false},                  // LibRaw: open, identify (and the stage cache's lookup)
	{"white-balance", stageWhiteBalance, false}, // choose the multipliers LibRaw applies to the CFA data
	{"demosaic", stageDemosaic, false},          // LibRaw: unpack, black level, WB, demosaic → linear camera RGB float32 (or the cached copy)
	{"camera-matrix", stageCameraMatrix, false}, // camera RGB → linear working space (Rec.2020, D65)
	{"exposure", stageExposure, false},          // × 2^(EV + BaselineExposure)
	{"tone", stageTone, false},                  // tone curve, scene- to display-referred
	{"resize", stageResize, true},               // Lanczos-3 to the variant's long edge, in linear light
	{"output-space", stageOutputSpace, true},    // working space → the variant's linear colour space, sharpen, clip to [0,1]
	{"orientation", stageOrientation, true},     // rotate/mirror upright, once (a view read by quantise)
	{"quantise", stageQuantise, true},           // the space's transfer function + rounding to 8 or 16 bits
	{"encode", stageEncode, true},               // JPEG, TIFF16, WebP, PNG with ICC profile and EXIF, to a temporary file
}

// job carries one file through the stages.
type job struct {
	in       string
	outs     []*variantJob
	cur      *variantJob // the variant the per-variant stages work on
	settings Settings
	cache    *CacheOptions
	cacheKey string
	cached   *cacheEntry // the decoded image read from the stage cache
	// inputHash is the input's content hash taken just before decoding
	// (decodedHash; "" when unread): the record's InputHash and the stage
	// cache's key, so the input is read once for both.
	inputHash string

	hdr      *header.Header // from Plan.Inspect, or read by stageOpen
	h        *libraw.Handle
	info     libraw.Info
	params   libraw.Params
	warnings []string

	camera []float32 // linear camera RGB, W×H×colors
	colors int
	img    Image // the shared working-space image, after tone
	// rendered keeps a variant's linear output image for later variants of
	// the same space, size and sharpening (renderKey).
	rendered map[string]Image
}

// Result describes one converted file.
type Result struct {
	Input, Output string
	// Width and Height of the written image in pixels, after orientation.
	Width, Height int
	// Info is LibRaw's metadata of the input.
	Make, Model string
	Flip        int
	// Warnings are non-fatal notes (for example a missing camera white
	// balance).
	Warnings []string
	// Timings of each stage, in Stages order; per-variant stages of
	// variants after the first are named "VARIANT/STAGE".
	Timings []StageTiming
	// Decoded reports that LibRaw's decode (the demosaic stage) ran to
	// completion, even if a later stage failed; FromCache that the decoded
	// image came from the stage cache instead.
	Decoded, FromCache bool
	// Variants are the files written, in the order asked.
	Variants []VariantResult
	// InputHash is the hash of the input's content taken just before it
	// was decoded ("xxh3:<16 hex>", state.HashFile; "" if unread): the
	// up-to-date record keeps it, and an input whose content differs after
	// the conversion changed while it was converted.
	InputHash string `json:",omitempty"`
}

// StageTiming is the wall time one stage took.
type StageTiming struct {
	Stage    string
	Duration time.Duration
}

// ConvertFile converts the RAW file in to the output file out with settings
// s. out is written through a temporary file in its directory that is
// renamed into place only when everything succeeded, so a failed
// conversion leaves no output file, not even an empty or partial one. The
// output directory must exist.
//
// Errors name the input path and wrap rawerr.ErrEmpty, ErrNotRaw,
// ErrUnsupported or ErrCorrupt for bad input, and context errors when ctx
// ends.
func ConvertFile(ctx context.Context, in, out string, s Settings) (res Result, err error) {
	vs := s.OutputVariants()
	return convertFile(ctx, in, []OutputSpec{{Variant: vs[0], Path: out}}, s, nil, nil)
}

// ConvertVariants converts the RAW file in once and writes every output of
// outs from that one decode, each through its own temporary file; the
// outputs are renamed into place only when all of them succeeded. With
// cache set, the decoded image is read from or written to the stage cache.
func ConvertVariants(ctx context.Context, in string, outs []OutputSpec, s Settings, c *CacheOptions) (Result, error) {
	return convertFile(ctx, in, outs, s, nil, c)
}

// convertFile is ConvertVariants with the header already read (hdr may be
// nil).
func convertFile(ctx context.Context, in string, outs []OutputSpec, s Settings, hdr *header.Header, c *CacheOptions) (res Result, err error) {
	if err := s.Validate(); err != nil {
		return res, err
	}
	if len(outs) == 0 {
		return res, fmt.Errorf("%s: no output asked for", in)
	}
	// One LibRaw handle per goroutine, on one locked OS thread.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	j := &job{in: in, settings: s, hdr: hdr, cache: c}
	asked := make([]*variantJob, 0, len(outs)) // the order asked for, for the result
	for _, o := range outs {
		v := &variantJob{spec: o}
		j.outs = append(j.outs, v)
		asked = append(asked, v)
	}
	defer j.cleanup()
	res = Result{Input: in, Output: outs[0].Path}
	run := func(st Stage, name string) error {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("%s: %w", in, err)
		}
		t0 := time.Now()
		err := st.run(ctx, j)
		res.Timings = append(res.Timings, StageTiming{name, time.Since(t0)})
		res.Decoded = res.Decoded || (err == nil && st.Name == "demosaic" && j.cached == nil)
		if err != nil {
			return fmt.Errorf("%s: %w", in, err)
		}
		return nil
	}
	perFile := func(from, to string) error {
		on := false
		for _, st := range Stages {
			on = on || st.Name == from
			if on && !st.perVariant {
				if err := run(st, st.Name); err != nil {
					return err
				}
			}
			if st.Name == to {
				return nil
			}
		}
		return nil
	}
	variant := func(i int, v *variantJob) error {
		j.cur = v
		for _, st := range Stages {
			if !st.perVariant {
				continue
			}
			name := st.Name
			if i > 0 {
				name = v.spec.Variant.Name + "/" + st.Name
			}
			if err := run(st, name); err != nil {
				return err
			}
		}
		if len(j.outs) > 1 {
			// Collect this variant's buffers before the next one
			// allocates, so memory follows the estimate; they hold no
			// pointers, so this is cheap.
			runtime.GC()
		}
		return nil
	}
	j.inputHash = decodedHash(in)
	res.InputHash = j.inputHash
	if err := perFile("open", "demosaic"); err != nil {
		return res, err
	}
	fault.At(fault.Decoded, in)
	res.FromCache = j.cached != nil
	// Now that the size is known: downscaled variants first (stable).
	var first, rest []*variantJob
	for _, v := range j.outs {
		if j.downscaled(v) {
			first = append(first, v)
		} else {
			rest = append(rest, v)
		}
	}
	j.outs = append(groupRenditions(first), groupRenditions(rest)...)
	// Downscaled variants first, from the camera image itself: resizing it
	// before the camera matrix, exposure and tone costs a fraction of those
	// stages at full size (stageResize).
	full := 0
	for i, v := range j.outs {
		if !j.downscaled(v) {
			full++
			continue
		}
		if err := variant(i, v); err != nil {
			return res, err
		}
	}
	if full > 0 {
		if err := perFile("camera-matrix", "tone"); err != nil {
			return res, err
		}
		for i, v := range j.outs {
			if !j.downscaled(v) {
				if err := variant(i, v); err != nil {
					return res, err
				}
			}
		}
	}
	j.releaseCached()
	j.img = Image{}
	// Renaming is all or nothing as far as we can make it: a directory (or
	// other non-file) in the way of one output fails the file before any
	// output is renamed.
	for _, v := range asked {
		if fi, err := os.Lstat(v.spec.Path); err == nil && !fi.Mode().IsRegular() && fi.Mode()&os.ModeSymlink == 0 {
			return res, fmt.Errorf("%s: its output %s is a %s, not a file; move it away", in, v.spec.Path, fileKind(fi.Mode()))
		}
	}
	fault.At(fault.Renaming, in)
	for _, v := range asked {
		// A file replaced keeps its permissions (a user's chmod 600).
		if fi, err := os.Lstat(v.spec.Path); err == nil && fi.Mode().IsRegular() {
			os.Chmod(v.tmp, fi.Mode().Perm())
		}
		if err := os.Rename(v.tmp, v.spec.Path); err != nil {
			return res, fmt.Errorf("%s: %w", in, err)
		}
		v.tmp = ""
		syncDir(filepath.Dir(v.spec.Path))
		res.Variants = append(res.Variants, VariantResult{Name: v.spec.Variant.Name, Path: v.spec.Path, Width: v.upright.W, Height: v.upright.H})
	}
	j.finishCache()
	res.Width, res.Height = res.Variants[0].Width, res.Variants[0].Height
	res.Make, res.Model, res.Flip = j.info.Make, j.info.Model, j.info.Flip
	res.Warnings = j.warnings
	return res, nil
}

// groupRenditions orders vs so that variants sharing a rendition
// (renderKey: space, size, sharpening) are next to each other, groups in
// the order of their first variant: a shared rendition is then kept only
// while its own variants are written, never beside other variants' images,
// as the memory estimate assumes.
func groupRenditions(vs []*variantJob) []*variantJob {
	var keys []string
	groups := map[string][]*variantJob{}
	for _, v := range vs {
		k := renderKey(v.spec.Variant)
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], v)
	}
	out := make([]*variantJob, 0, len(vs))
	for _, k := range keys {
		out = append(out, groups[k]...)
	}
	return out
}

// fileKind names a file mode's type for messages: "directory", "named
// pipe", "socket", "device".
func fileKind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "directory"
	case m&os.ModeNamedPipe != 0:
		return "named pipe"
	case m&os.ModeSocket != 0:
		return "socket"
	case m&(os.ModeDevice|os.ModeCharDevice) != 0:
		return "device"
	}
	return "special file"
}

// TempPrefix starts the name of every temporary output file; the output's
// base name and a random suffix follow (".rawbatch-tmp-IMG_1.jpg.123456"),
// so leftovers of a killed run can be found per output (RemoveTemps). A
// base name too long for that is shortened (tempStem).
const TempPrefix = ".rawbatch-tmp-"

// RemoveTemps removes temporary files left for output out by a conversion
// that was killed (those no live process holds: see CleanStaleTemps). It
// returns how many it removed.
func RemoveTemps(out string) int {
	prefix := TempPrefix + tempStem(out) + "."
	matches, _ := filepath.Glob(filepath.Join(filepath.Dir(out), globEscape(prefix)+"*"))
	n := 0
	for _, m := range matches {
		// Only os.CreateTemp's own names: the prefix and digits, nothing
		// after, so an input's output that merely starts alike is kept.
		if rest := strings.TrimPrefix(filepath.Base(m), prefix); rest == "" || strings.Trim(rest, "0123456789") != "" {
			continue
		}
		if _, ok := removeIfStale(m); ok {
			n++
		}
	}
	return n
}

// globEscape escapes filepath.Match's special characters.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// cleanup releases the LibRaw handle and a cache mapping, and removes the
// temporary outputs left by a failed stage.
func (j *job) cleanup() {
	if j.h != nil {
		j.h.Close()
		j.h = nil
	}
	j.releaseCached()
	for _, v := range j.outs {
		if v.tmp != "" {
			os.Remove(v.tmp)
			v.tmp = ""
		}
	}
}

func stageOpen(ctx context.Context, j *job) error {
	if j.hdr == nil {
		hdr, err := ReadHeader(j.in)
		if err != nil {
			return unwrapPath(j.in, err)
		}
		j.hdr = hdr
	}
	h, err := libraw.New()
	if err != nil {
		return err
	}
	j.h = h
	stop := context.AfterFunc(ctx, h.Cancel)
	defer stop()
	if err := h.Open(j.in); err != nil {
		return unrecognised(j.in, err)
	}
	j.info = h.Info()
	return j.lookupCache()
}

// unwrapPath drops a leading "path: " from err's text, since ConvertFile
// adds the path once itself; the error chain is kept.
func unwrapPath(path string, err error) error {
	if msg, ok := strings.CutPrefix(err.Error(), path+": "); ok {
		return &pathless{msg: msg, err: err}
	}
	return err
}

type pathless struct {
	msg string
	err error
}

func (p *pathless) Error() string { return p.msg }
func (p *pathless) Unwrap() error { return p.err }

// unrecognised rewords LibRaw's "unsupported" for a file that has no RAW
// signature at all (random bytes, a headerless RAW cut short): LibRaw cannot
// tell an unknown format from a damaged one, and suggesting a newer LibRaw
// would mislead.
func unrecognised(path string, err error) error {
	if errors.Is(err, rawerr.ErrUnsupported) && !header.HasRawSignature(path) {
		return fmt.Errorf("%w: LibRaw %s does not recognise it (an unknown format, or a damaged file)",
			rawerr.ErrNotRaw, libraw.ShortVersion())
	}
	return err
}

func stageWhiteBalance(_ context.Context, j *job) error {
	j.params = j.settings.librawParams()
	cameraWBFallback(j)
	return nil
}

func stageDemosaic(ctx context.Context, j *job) error {
	if j.cached != nil {
		// The decoded image is in the stage cache: no LibRaw decode.
		j.h.Close()
		j.h = nil
		j.camera, j.colors = j.cached.pix, j.cached.c
		j.img = Image{W: j.cached.w, H: j.cached.h}
		return nil
	}
	stop := context.AfterFunc(ctx, j.h.Cancel)
	defer stop()
	if err := j.h.Unpack(); err != nil {
		return err
	}
	if err := j.h.Process(j.params); err != nil {
		if errors.Is(err, libraw.ErrCancelled) && ctx.Err() != nil {
			return ctx.Err()
		}
		return err
	}
	if j.params.WB == libraw.WBCamera && j.h.Warnings()&libraw.WarnBadCameraWB != 0 {
		j.warnings = append(j.warnings, "no usable camera white balance in the file; used daylight")
	}
	pix, w, h, colors, err := j.h.CopyImage(nil)
	if err != nil {
		return err
	}
	// The LibRaw handle and its buffers are no longer needed.
	j.h.Close()
	j.h = nil
	if j.settings.HalfSize && j.info.Filters == 0 {
		// LibRaw's half_size only shrinks mosaic data; halve the rest here
		// so --half-size means the same output size for every file.
		pix, w, h = halve(pix, w, h, colors)
	}
	j.camera, j.colors = pix, colors
	j.img = Image{W: w, H: h}
	j.storeCache()
	return nil
}

// halve box-filters an interleaved image of w×h pixels with nc channels to
// ((w+1)/2)×((h+1)/2), averaging each 2×2 block (the pixels that exist at
// the right and bottom edges), as LibRaw's half-size decode sizes it.
func halve(src []float32, w, h, nc int) ([]float32, int, int) {
	hw, hh := halvedIf(true, w, h)
	dst := make([]float32, hw*hh*nc)
	for y := range hh {
		for x := range hw {
			var n float32
			var sum [4]float32
			for dy := range 2 {
				for dx := range 2 {
					sx, sy := 2*x+dx, 2*y+dy
					if sx >= w || sy >= h {
						continue
					}
					n++
					for c := range nc {
						sum[c] += src[(sy*w+sx)*nc+c]
					}
				}
			}
			for c := range nc {
				dst[(y*hw+x)*nc+c] = sum[c] / n
			}
		}
	}
	return dst, hw, hh
}

// CameraToWorking returns the 3×4 matrix from white-balanced linear camera
// RGB to the linear working space: M(sRGB→Rec.2020) · rgb_cam, where rgb_cam
// is LibRaw's camera→linear-sRGB matrix (color.rgb_cam, derived by LibRaw
// from the camera's XYZ→camera matrix as dcraw's cam_xyz_coeff does: rows of
// cam_xyz·M(sRGB→XYZ) normalised to sum 1, then pseudo-inverted).
func CameraToWorking(rgbCam [3][4]float64) [3][4]float64 {
	m := colour.ConvertMatrix(colour.SRGB, WorkingSpace)
	var out [3][4]float64
	for i := range 3 {
		for k := range 4 {
			var s float64
			for j := range 3 {
				s += m[i][j] * rgbCam[j][k]
			}
			out[i][k] = s
		}
	}
	return out
}

func stageCameraMatrix(_ context.Context, j *job) error {
	if w := noMatrixWarning(j.info); w != "" {
		j.warnings = append(j.warnings, w)
	}
	j.img = j.toWorking(j.camera, j.colors, j.img.W, j.img.H, j.colors == 3 && j.cached == nil)
	j.camera = nil
	// A cache entry's mapping is no longer read: unmap it now, so its
	// pages do not count in this process's memory beside the variants'
	// buffers (measured: +12 bytes per pixel of RSS all through them).
	j.releaseCached()
	return nil
}

// toWorking converts a w×h camera-RGB image of nc channels to the linear
// working space with CameraToWorking's matrix, in place when allowed (three
// channels, a buffer of our own; each pixel is read before it is written).
func (j *job) toWorking(src []float32, nc, w, h int, inPlace bool) Image {
	m := CameraToWorking(j.info.RGBCam)
	var mf [3][4]float32
	for i := range 3 {
		for k := range 4 {
			mf[i][k] = float32(m[i][k])
		}
	}
	n := w * h
	dst := src
	if !inPlace || nc != 3 {
		dst = make([]float32, n*3) // e.g. the cache's read-only mapping
	}
	par.Rows(h, func(lo, hi int) {
		for p := lo * w; p < hi*w; p++ {
			var c [4]float32
			copy(c[:nc], src[p*nc:p*nc+nc])
			if nc == 1 { // monochrome: grey in all channels
				c[1], c[2] = c[0], c[0]
			}
			for i := range 3 {
				dst[p*3+i] = mf[i][0]*c[0] + mf[i][1]*c[1] + mf[i][2]*c[2] + mf[i][3]*c[3]
			}
		}
	})
	return Image{W: w, H: h, Pix: dst[:n*3]}
}

// ExposureEV returns the exposure change applied to a file: the --exposure
// value plus, when enabled, the DNG BaselineExposure (LibRaw reports -999
// when the tag is absent).
func ExposureEV(s Settings, in libraw.Info) float64 {
	ev := s.Exposure
	if s.BaselineExposure && in.DNGVersion != 0 && in.BaselineExposure > -100 && in.BaselineExposure < 100 {
		ev += in.BaselineExposure
	}
	return ev
}

func stageExposure(_ context.Context, j *job) error {
	j.expose(j.img)
	return nil
}

// expose multiplies img by the exposure gain 2^ExposureEV.
func (j *job) expose(img Image) {
	ev := ExposureEV(j.settings, j.info)
	if ev == 0 {
		return
	}
	g := exposureGain(ev)
	img.parallel(func(pix []float32) {
		for i := range pix {
			pix[i] *= g
		}
	})
}

func stageTone(_ context.Context, j *job) error {
	applyTone(j.img, j.settings.Tone)
	return nil
}

// Metadata is below; the per-variant stages are in render.go.

// Metadata returns the EXIF fields carried into the output file: the
// file's own Make, Model, date strings and capture fields (hdr.EXIF) when
// its header was read, since LibRaw normalises camera names ("EOS 30D" for
// "Canon EOS 30D"), invents a Make from a DNG's UniqueCameraModel, takes a
// modification time for the capture time, rebuilds dates through mktime
// and reports defaults (1 s, f/1) for fields a file lacks; LibRaw's values
// otherwise (and LibRaw's lens when the file names none). LibRaw's time
// stamp stands in only for a file with no EXIF date string (a CRW).
func Metadata(in libraw.Info, hdr *header.Header) encode.Metadata {
	md := encode.Metadata{
		Make: in.Make, Model: in.Model, Lens: in.Lens,
		Software:     "rawbatch",
		DateTime:     in.Timestamp,
		ExposureTime: in.Shutter,
		FNumber:      in.Aperture,
		FocalLength:  in.FocalLength,
	}
	if in.ISO > 0 && in.ISO < math.MaxUint16 {
		md.ISO = int(math.Round(in.ISO))
	}
	if hdr != nil {
		e := hdr.EXIF
		md.ExposureTime, md.FNumber, md.FocalLength, md.ISO = e.ExposureTime, e.FNumber, e.FocalLength, e.ISO
		if md.Lens == "" {
			md.Lens = e.Lens
		}
		if !e.DateTime.IsZero() {
			md.DateTime = e.DateTime
		}
		md.Dates = encode.Dates(e.Dates)
		// Make and Model as the file writes them ("Canon EOS 30D"), not
		// LibRaw's normalised names ("EOS 30D"), and only those: no Make
		// when the file has a Model alone; LibRaw's when it names no
		// camera (hdr.EXIF has them then too).
		if e.Make != "" || e.Model != "" {
			md.Make, md.Model = e.Make, e.Model
		}
	}
	return md
}

// syncDir fsyncs a directory so a rename in it is durable.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}
