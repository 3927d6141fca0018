package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rawbatch/rawbatch/internal/bytetext"
	"github.com/rawbatch/rawbatch/internal/fault"
	"github.com/rawbatch/rawbatch/internal/filehash"
	"github.com/rawbatch/rawbatch/internal/rawerr"
	"github.com/rawbatch/rawbatch/pipeline/colour"
	"github.com/rawbatch/rawbatch/pipeline/encode"
	"github.com/rawbatch/rawbatch/pipeline/header"
	"github.com/rawbatch/rawbatch/pipeline/internal/libraw"
	"github.com/rawbatch/rawbatch/pipeline/internal/thp"
)

// WorkingSpace is the linear RGB space from the camera-matrix stage to
// output-space: ITU-R BT.2020
// primaries, D65 white, scene-referred linear. It holds every colour a
// camera matrix produces for real scenes without negative values in most
// cases.
var WorkingSpace = colour.Rec2020

// job carries one file through the stages.
type job struct {
	in       string
	outs     []*variantJob
	cur      *variantJob // the variant the per-variant stages work on
	settings Settings
	cache    *CacheOptions
	threads  int // LibRaw's OpenMP threads (ConvertOptions.Threads)
	live     liveThreads
	// unfused runs every step alone, fused passes too (ConvertOptions'
	// unfused: the tests' reference).
	unfused  bool
	cacheKey string
	cached   *cacheEntry // the cache point's image read from the stage cache (stagecache.go)
	// cacheWarn: the warnings given before the demosaic step (the stage
	// cache stores those given from there to its point).
	cacheWarn int
	// inputHash is the input's content hash taken just before decoding
	// (decodedHash; "" when unread): the record's InputHash and the stage
	// cache's key, so the input is read once for both.
	inputHash string

	hdr      *header.Header // from Plan.Inspect, or read by stageOpen
	h        *libraw.Handle
	info     libraw.Info
	params   libraw.Params
	warnings []string
	levels   rawLevels        // the white-level stage's levels
	wb       WhiteBalanceUsed // the white-balance stage's choice
	// wbRaw is the white-balance stage's copy of the raw data, shared by
	// its preview fit and its raw estimate (whiteBalanceCost counts one
	// copy); nil outside the stage.
	wbRaw []uint16
	// lensByOpcodes: the DNG opcode stages applied the file's own lens
	// corrections (WarpRectilinear, FixVignetteRadial, GainMap), so the
	// lensfun stage does not correct the lens again.
	lensByOpcodes bool
	opcodes       opcodeState     // the opcode stages' lists and report (stage_opcodes.go)
	lens          *LensCorrection // what the lens stage did (nil: not run)
	crop          *Crop           // the crop stage's crop (stage_crop.go)
	// cropFrame is the size of the image the crop was cut from (the
	// decoded visible area; 0 when not cropped): the frame OpcodeList3
	// refers to (DNG §6: list 3 runs before the DefaultCrop).
	cropFrame [2]int

	// decoded: LibRaw's decode ran to completion; fromCache: the decoded
	// image came from the stage cache; decodedW, decodedH: the size the
	// demosaic stage just made (0 otherwise), checked against the plan.
	decoded, fromCache bool
	decodedW, decodedH int
	// matrixWarned: the camera-matrix stage's warning is given (once,
	// whichever step ran it first).
	matrixWarned bool
	// rawMeta is the raw's own metadata (header.ReadMeta), read by the
	// first encode step; rawMetaRead says it was.
	rawMeta     header.Meta
	rawMetaRead bool

	camera []float32 // linear camera RGB, W×H×colors
	colors int
	img    Image // the shared working-space image, after tone
	// rendered keeps a variant's linear output image for later variants of
	// the same space, size and sharpening (renderKey).
	rendered map[string]Image

	lookJob // the embedded preview and the look's state (stage_preview.go)

	// denoiseState: the denoise and capture-sharpen stages' choices
	// (stage_denoise.go).
	denoiseState
	// demosaicState: the demosaic the file got (stage_demosaic.go).
	demosaicState

	// wholeImage: never stream (ConvertOptions' wholeImage); stream: the
	// streamed conversion running (stream.go), nil otherwise.
	wholeImage bool
	stream     *stream
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
	// Timings of each step of the file's plan (PlanVariants), in the order
	// they ran, named as Step.Name.
	Timings []StageTiming
	// Decoded reports that LibRaw's decode (the demosaic stage) ran to
	// completion, even if a later stage failed; FromCache that the decoded
	// image came from the stage cache instead.
	Decoded, FromCache bool
	// Streamed reports that the conversion ran from demosaic to encode in
	// row bands, without a full-size image (docs/pipeline.md
	// "Streaming").
	Streamed bool `json:",omitempty"`
	// HalfSizeTier reports that the half-size tier decoded the file at
	// half size because every variant is at most half the picture
	// (WithHalfSizeTier; --half-size-tier).
	HalfSizeTier bool `json:",omitempty"`
	// ThreadsMax is the largest thread count the conversion's steps
	// read while it ran (ConvertOptions.LiveThreads, at least Threads; 0
	// when neither was given).
	ThreadsMax int `json:",omitempty"`
	// Variants are the files written, in the order asked.
	Variants []VariantResult
	// InputHash is the hash of the input's content taken just before it
	// was decoded ("xxh3:<16 hex>", state.HashFile; "" if unread): the
	// up-to-date record keeps it, and an input whose content differs after
	// the conversion changed while it was converted.
	InputHash string `json:",omitempty"`
	// WhiteBalance is the white balance used and why (nil if not decoded).
	WhiteBalance *WhiteBalanceUsed `json:",omitempty"`
	// Exposure is the exposure applied and where it came from.
	Exposure ExposureResult
	// Opcodes is what was done with the DNG's opcode lists (nil without).
	Opcodes *OpcodesResult `json:",omitempty"`
	// Denoise and CaptureSharpen are the noise reduction and capture
	// sharpening applied and why (nil if not decoded).
	Denoise        *DenoiseUsed `json:",omitempty"`
	CaptureSharpen *SharpenUsed `json:",omitempty"`
	// Lens is the lens correction applied, or why none (nil: the lens
	// stage did not run: --lens off, or not decoded).
	Lens *LensCorrection `json:",omitempty"`
	// Crop is the part of LibRaw's visible area the outputs cover and
	// where it came from (--crop, docs/crop.md); nil if not decoded.
	Crop *Crop `json:",omitempty"`
	// Demosaic is the demosaic the decoded image actually got (DemosaicUsed:
	// "rcd", LibRaw's "ahd", ..., "xtrans", or "none"), also on a stage
	// cache hit; "" if not decoded.
	Demosaic string `json:",omitempty"`
	// Edit is the file's own edit the outputs were made with
	// (Settings.Edit: its sidecar's orientation, crop, exposure and white
	// balance); nil when it has none.
	Edit *Edit `json:",omitempty"`
}

// StageTiming is the wall time one step of the plan took.
type StageTiming struct {
	Stage    string
	Duration time.Duration
	// Pass is the step's fused pass (Step.Pass; 0: it ran alone). The
	// pixel work of a pass is timed in one of its steps: the last one
	// when the pass writes the image back, quantise when quantise ends
	// it (with a streamed encoder, the time spent making the encoder's
	// bands, taken out of the encode step's time, which is then what the
	// encoder took beyond it: the encoder runs beside the making of the
	// bands, encode.Bands); the other steps of the pass show only their
	// preparation.
	Pass int `json:",omitempty"`
}

// Text is a text of a result that may hold a file or lens name: a
// string of any bytes, written to JSON (the report, the JSON log) with each
// byte that is not UTF-8 shown as \xNN (Escaped), where json.Marshal would
// replace it with U+FFFD.
type Text string

// Escaped is t with each byte that is not UTF-8 shown as \xNN
// (bytetext.Escape); valid UTF-8 is returned as it is.
func (t Text) Escaped() string { return bytetext.Escape(string(t)) }

// MarshalJSON writes t as a JSON string of t.Escaped().
func (t Text) MarshalJSON() ([]byte, error) { return json.Marshal(t.Escaped()) }

// ConvertOutputs converts the RAW file in into every output of outs from
// one decode, run as o says (o.Header, when set, is the header already
// read; o.Cache the stage cache; o.Threads LibRaw's threads). It plans the
// file's steps (PlanVariants, at the header's decoded size), runs them
// (runPlan) and then commits the outputs (commit): each is written through
// its own temporary file in its directory, and all are renamed into place
// only when every step succeeded, so a failed conversion leaves no output
// file, not even an empty or partial one. The output directories must
// exist.
//
// Errors name the input path and wrap rawerr's kinds (ErrEmpty, ErrNotRaw,
// ErrUnsupported, ErrCorrupt for bad input, ErrNeedsWhole), or context
// errors when ctx ends.
func ConvertOutputs(ctx context.Context, in string, outs []OutputSpec, s Settings, o ConvertOptions) (res Result, err error) {
	if err := s.Validate(); err != nil {
		return res, err
	}
	if len(outs) == 0 {
		return res, fmt.Errorf("%s: no output asked for", in)
	}
	// One LibRaw handle per goroutine, on one locked OS thread.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	// The huge-page advice of this file's buffers lasts as long as they do.
	defer thp.Hold()()

	j := &job{in: in, settings: s, hdr: o.Header, cache: o.Cache, threads: o.Threads, live: liveThreads{f: o.LiveThreads}, unfused: o.unfused, wholeImage: o.wholeImage}
	asked := make([]*variantJob, 0, len(outs)) // the order asked for, for the result
	for _, o := range outs {
		v := &variantJob{spec: o}
		j.outs = append(j.outs, v)
		asked = append(asked, v)
	}
	defer j.cleanup()
	res = Result{Input: in, Output: outs[0].Path}
	defer func() { res.ThreadsMax = j.live.peak(j.threads) }()
	j.inputHash = decodedHash(in)
	res.InputHash = j.inputHash
	// The plan needs the decoded size: from the header, read here unless
	// the caller did (Plan.Inspect).
	if j.hdr == nil {
		h, err := ReadHeader(in)
		if err != nil {
			return res, fmt.Errorf("%s: %w", in, unwrapPath(in, err))
		}
		j.hdr = h
	}
	// The half-size tier: small variants only, a half-size decode.
	vs := make([]Variant, len(outs))
	for i, o := range outs {
		vs[i] = o.Variant
	}
	j.settings, res.HalfSizeTier = WithHalfSizeTier(InfoFromHeader(j.hdr), j.settings, vs)
	if err := j.runPlan(ctx, &res, asked, o); err != nil {
		return res, fmt.Errorf("%s: %w", in, err)
	}
	if err := j.commit(&res, asked); err != nil {
		return res, fmt.Errorf("%s: %w", in, err)
	}
	j.fillResult(&res)
	return res, nil
}

// runPlan runs the steps of j's plan in order, the only thing the develop
// does with stages: a fused pass as one (runPass), the steps from
// demosaic on in row bands when the plan streams them and the file allows
// (runStream), any other step alone. It plans the rest again when LibRaw
// decoded another size than the header said. res gets the steps' timings
// and whether the file was decoded, read from the cache or streamed.
func (j *job) runPlan(ctx context.Context, res *Result, asked []*variantJob, o ConvertOptions) error {
	vs := make([]Variant, len(asked))
	for i, v := range asked {
		vs[i] = v.spec.Variant
	}
	dw, dh := DecodedSize(InfoFromHeader(j.hdr), j.settings)
	plan := PlanVariants(dw, dh, vs, j.settings)
	j.orderOutputs(plan, asked)
	for n := 0; n < len(plan.Steps); n++ {
		st := plan.Steps[n]
		if err := ctx.Err(); err != nil {
			return err
		}
		j.cur = nil
		if st.v >= 0 {
			j.cur = asked[st.v]
		}
		if j.cache != nil {
			// The stage cache (stagecache.go): a hit skips the steps up
			// to its point, or runs the rest as a stream's last pass.
			next, done, err := j.runFromCache(ctx, &plan, n, asked, res, o)
			if err != nil || done {
				return err
			}
			if next > n {
				n = next - 1
				continue
			}
		}
		var err error
		if st.Stream && st.Stage == demosaicStage.Name {
			// From demosaic on in row bands, if the file allows (stream.go).
			tims, handled, err := j.runStream(ctx, plan, n, asked)
			res.Timings = append(res.Timings, tims...)
			if handled {
				res.Decoded, res.Streamed = j.decoded, err == nil
				return err
			}
			if o.Admitted > 0 && o.Whole > o.Admitted {
				// Admitted to stream, it must be made whole: not within
				// what it was admitted with (ConvertOptions.Admitted).
				return fmt.Errorf("%w (%.0f MiB admitted, %.0f MiB needed)", rawerr.ErrNeedsWhole,
					float64(o.Admitted)/(1<<20), float64(o.Whole)/(1<<20))
			}
		}
		if st.Pass > 0 && !j.unfused {
			// A fused pass: its steps run as one (runPass).
			m := n
			for m+1 < len(plan.Steps) && plan.Steps[m+1].Pass == st.Pass {
				m++
			}
			var tims []StageTiming
			tims, err = j.runPass(ctx, plan.Steps[n:m+1], asked)
			res.Timings = append(res.Timings, tims...)
			n, st = m, plan.Steps[m]
		} else {
			t0 := time.Now()
			err = st.stage.run(ctx, j)
			res.Timings = append(res.Timings, StageTiming{Stage: st.Name, Duration: time.Since(t0)})
			j.movePassTime(res.Timings)
		}
		res.Decoded, res.FromCache = j.decoded, j.fromCache
		if err != nil {
			return err
		}
		if st.Stage == openStage.Name {
			// Which source=auto variants the embedded preview makes.
			if again, ok := j.resolveSources(plan, n, asked); ok {
				plan = again
				guessed := PlannedSources(InfoFromHeader(j.hdr), vs, j.settings)
				fellBack := false
				for i := range vs {
					vs[i].Source = SourceRaw
					if plan.fromPreview(i) {
						vs[i].Source = SourcePreview
					}
					fellBack = fellBack || guessed[i].Source == SourcePreview && vs[i].Source == SourceRaw
				}
				if fellBack && o.Admitted > 0 && o.Whole > o.Admitted {
					// Admitted with a source=auto variant from the
					// preview the header promised, it needs the raw
					// data: not within what it was admitted with.
					return fmt.Errorf("%w (%.0f MiB admitted, %.0f MiB needed: a source=auto variant falls back to the raw data)", rawerr.ErrNeedsWhole,
						float64(o.Admitted)/(1<<20), float64(o.Whole)/(1<<20))
				}
			}
		}
		j.storeCacheWhole(plan, n) // stagecache.go: at the cache point
		cw, ch := croppedSize(j.hdr, j.settings, j.decodedW, j.decodedH)
		if st.Stage == editCropStage.Name {
			cw, ch = j.img.W, j.img.H // the file's own crop cut the image
		}
		if (j.decodedW != 0 || st.Stage == editCropStage.Name) && (cw != plan.W || ch != plan.H) {
			// LibRaw decoded another size than the header said (after
			// the crop stage's crop of it), or the file's own crop cut
			// it: plan the rest again for the size it is (the steps so
			// far are shared and size-independent).
			again := PlanVariants(cw, ch, vs, j.settings)
			again.Steps = append(plan.Steps[:n+1:n+1], again.Steps[n+1:]...)
			plan = again
			j.orderOutputs(plan, asked)
		}
		j.decodedW, j.decodedH = 0, 0
		if len(j.outs) > 1 && st.v >= 0 && (n+1 == len(plan.Steps) || plan.Steps[n+1].v != st.v) {
			releaseVariant()
		}
	}
	return nil
}

// orderOutputs puts j's outputs in the order plan makes them.
func (j *job) orderOutputs(plan StagePlan, asked []*variantJob) {
	j.outs = j.outs[:0]
	for _, vi := range plan.order {
		j.outs = append(j.outs, asked[vi])
	}
}

// commit renames every temporary output of asked into place, after the
// plan has run, and adds each to res.Variants. Renaming is all or nothing
// as far as it can be made: a directory (or other non-file) in the way of
// one output fails the file before any output is renamed. A file replaced
// keeps its permissions (a user's chmod 600).
func (j *job) commit(res *Result, asked []*variantJob) error {
	j.releaseCached()
	j.img = Image{}
	for _, v := range asked {
		var st unix.Stat_t
		if lstatIn(v.dir, v.spec.Path, &st) == nil && st.Mode&unix.S_IFMT != unix.S_IFREG && st.Mode&unix.S_IFMT != unix.S_IFLNK {
			return fmt.Errorf("its output %s is a %s, not a file; move it away", v.spec.Path, FileKind(fileMode(st.Mode)))
		}
	}
	fault.At(fault.Renaming, j.in)
	if err := fault.Fail(fault.Renaming, j.in); err != nil {
		// A test's injected write failure (faulttest's transient): the
		// temporary outputs are removed as for a real one (j.cleanup).
		return err
	}
	for _, v := range asked {
		var st unix.Stat_t
		keep := lstatIn(v.dir, v.spec.Path, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG
		// The temporary file as created (not a link put in its place),
		// given the replaced file's permissions, and once renamed no
		// longer marked: an output is no temporary, and a copy of it
		// must not pass for one. The mark goes after the rename, so that
		// a process killed between the two leaves a marked output (its
		// name is no temporary's: nothing takes it for one), not an
		// unmarked temporary file that no run would remove.
		fd, err := unix.Openat(int(v.dir.Fd()), filepath.Base(v.tmp), unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err == nil {
			if keep {
				unix.Fchmod(fd, st.Mode&0o777)
			}
			defer unix.Close(fd)
		}
		if err := unix.Renameat(int(v.dir.Fd()), filepath.Base(v.tmp), int(v.dir.Fd()), filepath.Base(v.spec.Path)); err != nil {
			return &os.LinkError{Op: "rename", Old: v.tmp, New: v.spec.Path, Err: err}
		}
		if fd >= 0 {
			unix.Fremovexattr(fd, tempMarkAttr)
		}
		v.tmp = ""
		v.dir.Sync()
		res.Variants = append(res.Variants, VariantResult{Name: v.spec.Variant.Name, Path: v.spec.Path, Width: v.upright.W, Height: v.upright.H, Source: v.source, SourceReason: v.sourceReason})
	}
	return nil
}

// fillResult sets what the stages found about the file in res, once its
// outputs are committed.
func (j *job) fillResult(res *Result) {
	res.Width, res.Height = res.Variants[0].Width, res.Variants[0].Height
	res.Make, res.Model, res.Flip = j.info.Make, j.info.Model, j.info.Flip
	j.exposureWithoutAnchor()
	res.Warnings = j.warnings
	res.WhiteBalance = j.whiteBalanceResult()
	res.Crop = j.cropResult()
	res.Exposure = ExposureResult{EV: j.exposureEV(), Source: j.exposureSource}
	res.Opcodes = j.opcodesResult()
	res.Denoise, res.CaptureSharpen = j.denoiseResult(), j.sharpenResult()
	res.Lens = j.lens
	res.Demosaic = j.demosaicResult()
	if e := j.settings.Edit; e.Key() != "" {
		res.Edit = &e
	}
}

// FileKind names a file mode's type for messages: "directory", "named
// pipe", "socket", "device".
func FileKind(m os.FileMode) string {
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

// CheckOutputLimits fails a file before decoding when one of the outputs
// of s would be larger than its format can hold, or than MaxOutputSide:
// WebP stores at most encode.MaxWebPSide pixels a side (a panorama's
// full-size WebP). The size is the decoded size of fi (DecodedSize) fitted
// to each variant. The error names in and the limit.
func CheckOutputLimits(in string, fi FileInfo, s Settings) error {
	w, h := DecodedSize(fi, s)
	for _, v := range s.OutputVariants() {
		if err := outputSizeError(in, v, w, h, encode.MaxWebPSide); err != nil {
			return err
		}
	}
	return nil
}

// IsSymlink reports whether path is a symbolic link itself (Lstat).
func IsSymlink(path string) bool {
	fi, err := os.Lstat(path)
	return err == nil && fi.Mode()&fs.ModeSymlink != 0
}

// PathReason returns the reason of err for a message that names path
// already: the *fs.PathError's operation and path are dropped, and a
// dangling symbolic link is named as such.
func PathReason(path string, err error) error {
	if errors.Is(err, fs.ErrNotExist) && IsSymlink(path) {
		return errors.New("broken symbolic link")
	}
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Path == path {
		return pe.Err
	}
	return err
}

// TempPrefix starts the name of every temporary output file; the output's
// base name, "." and a token follow (".rawbatch-tmp-IMG_1.jpg.<24 hex>"),
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
		// Only CreateTemp's own names: the prefix and a token that
		// verifies, so a file that merely starts alike is kept.
		if !validTempToken(prefix, strings.TrimPrefix(filepath.Base(m), prefix)) {
			continue
		}
		if _, ok := RemoveStaleTemp(m); ok {
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
			removeIn(v.dir, v.tmp)
			v.tmp = ""
		}
		v.closeDir()
	}
}

// closeDir closes v's output folder, once its output is renamed into
// place or removed.
func (v *variantJob) closeDir() {
	if v.dir != nil {
		v.dir.Close()
		v.dir = nil
	}
}

// fileMode is the os.FileMode type bits of a stat mode (FileKind's input).
func fileMode(m uint32) os.FileMode {
	switch m & unix.S_IFMT {
	case unix.S_IFDIR:
		return os.ModeDir
	case unix.S_IFIFO:
		return os.ModeNamedPipe
	case unix.S_IFSOCK:
		return os.ModeSocket
	case unix.S_IFCHR:
		return os.ModeDevice | os.ModeCharDevice
	case unix.S_IFBLK:
		return os.ModeDevice
	case unix.S_IFLNK:
		return os.ModeSymlink
	}
	return 0
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

// metadata returns what the outputs of j carry: Metadata's fields, every
// standard EXIF and GPS tag of the raw (header.ReadMeta, read once per file;
// a file whose EXIF cannot be read keeps the list above and gets a
// warning), the XMP packet (the raw's file name as DerivedFrom, its rating
// and label) and the settings' StripMetadata, Artist and Copyright.
func (j *job) metadata() encode.Metadata {
	if !j.rawMetaRead {
		j.rawMetaRead = true
		m, err := header.ReadMetaWith(j.in, j.settings.Sidecar != "off")
		if err != nil {
			j.warnings = append(j.warnings, fmt.Sprintf("metadata: %v; the output carries the basic EXIF list", err))
		}
		j.warnings = append(j.warnings, m.Warnings...)
		j.rawMeta = m
	}
	md := Metadata(j.info, j.hdr)
	for _, t := range j.rawMeta.Tags {
		md.Tags = append(md.Tags, encode.Tag(t))
	}
	x := j.rawMeta.Meta
	md.XMP = encode.XMP{DerivedFrom: filepath.Base(j.in), Rating: x.Rating, Label: x.Label, Keywords: x.Keywords,
		Hierarchical: x.Hierarchical, Creator: x.Creator, Title: x.Title, Description: x.Description, Rights: x.Rights}
	md.Strip = j.settings.StripMetadata
	md.Artist, md.Copyright = j.settings.Artist, j.settings.Copyright
	return md
}

// decodedHash hashes the input just before LibRaw opens it
// (filehash.File: XXH3-64, "xxh3:<16 hex>"), so that the record keeps the
// hash of the bytes that were decoded rather than of whatever is there
// after the conversion; "" when it cannot be read (the open then says why).
func decodedHash(in string) string {
	h, _, _, err := filehash.File(in, nil)
	if err != nil {
		return ""
	}
	return h
}

// LimitMemory sets the Go runtime's soft memory limit of a process that
// converts one file to its estimate (bytes) plus an eighth (at least
// gcSlack); 0 sets none. With
// the default GOGC the heap may grow to twice its live size before a
// collection, so several variants, each allocating and dropping full-size
// buffers, would take more than their estimate; the limit makes the
// collector keep to it. The big buffers hold no pointers, so the extra
// collections cost little (+2 % time measured on 20 variants).
func LimitMemory(estimate int64) {
	if estimate > 0 {
		debug.SetMemoryLimit(estimate + max(estimate/8, gcSlack))
	}
}

// gcSlack is the least a worker's Go memory limit adds to its file's
// estimate (otherwise an eighth of it), in bytes: room for the runtime's
// own memory, so collections run when the heap nears the estimate and not
// constantly.
const gcSlack = 4 << 20
