// Package libraw is rawbatch's thin binding to LibRaw, linked through
// pkg-config as libraw_r, LibRaw's thread-safe build: by default the
// bundled static LibRaw 0.21.4 that scripts/libraw.sh builds (its
// libraw_r.pc), with LIBRAW=system the system's (Debian: libraw-dev). Its
// C half is in libraw.c, rawdata.c, thumb.c and stream.cpp, declared in
// rb_libraw.h.
//
// Rules kept here:
//   - one Handle per goroutine, created, used and closed on one locked OS
//     thread (New checks the thread id on every call and refuses others);
//   - explicit Close, no finalizers, and no Go pointer is kept by C: pixel
//     data is copied into Go memory during a single call;
//   - every C allocation is freed by a defer next to its creation, or by
//     Close for the handle's own allocations;
//   - LibRaw return codes and its data-error callback become Go errors in one
//     place (errors.go).
//
// LibRaw's own printing is silenced: the data-error and memory-error
// callbacks are replaced by ones that only count.
package libraw

/*
#cgo pkg-config: libraw_r
#cgo CFLAGS: -O3
#cgo CXXFLAGS: -O2 -fopenmp
#cgo LDFLAGS: -lgomp
#include <stdlib.h>
#include <malloc.h>
#include "rb_libraw.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"
	"unsafe"

	"github.com/rawbatch/rawbatch/internal/fault"
	"github.com/rawbatch/rawbatch/internal/rawerr"
)

func init() { C.rb_malloc_setup() }

// Version returns the LibRaw version string of the library linked at run
// time (libraw_version()), for example "0.20.2-Release".
func Version() string { return C.GoString(C.libraw_version()) }

// VersionNumber returns LibRaw's run-time version as major<<16|minor<<8|patch
// (libraw_versionNumber()).
func VersionNumber() int { return int(C.libraw_versionNumber()) }

// ShortVersion returns "MAJOR.MINOR.PATCH" of the run-time LibRaw, the form
// used in user-facing messages ("not supported by LibRaw 0.20.2").
func ShortVersion() string {
	n := VersionNumber()
	return fmt.Sprintf("%d.%d.%d", n>>16, (n>>8)&0xff, n&0xff)
}

// LibraryPath returns the file name of the shared object that provides
// LibRaw in this process (from dladdr), e.g.
// "/lib/x86_64-linux-gnu/libraw_r.so.20"; for the bundled static build it
// is the executable itself.
func LibraryPath() string { return C.GoString(C.rb_lib_path()) }

// Bundled reports whether LibRaw is rawbatch's bundled build, linked
// statically into the binary (scripts/libraw.sh), rather than the system's
// shared libraw_r found through pkg-config.
func Bundled() bool { return C.rb_bundled() != 0 }

// ThreadSafe reports whether the linked LibRaw is the thread-safe build
// libraw_r: always for the bundled build (only libraw_r.a is built), else
// judged from the shared object's file name at run time.
func ThreadSafe() bool {
	if Bundled() {
		return true
	}
	p := LibraryPath()
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '/' {
			p = p[i+1:]
			break
		}
	}
	return len(p) >= 9 && p[:9] == "libraw_r."
}

// Demosaic is a LibRaw demosaic algorithm (libraw_output_params_t.user_qual).
type Demosaic int

// LibRaw's user_qual values (LibRaw docs, "Processing parameters": -q).
const (
	Linear Demosaic = 0  // bilinear interpolation
	VNG    Demosaic = 1  // Variable Number of Gradients
	PPG    Demosaic = 2  // Patterned Pixel Grouping
	AHD    Demosaic = 3  // Adaptive Homogeneity-Directed (Hirakawa & Parks 2005)
	DCB    Demosaic = 4  // DCB (Jacek Gozdz)
	DHT    Demosaic = 11 // DHT (Anton Petrusevich)
	AAHD   Demosaic = 12 // modified AHD (Anton Petrusevich)
)

// WBMode chooses how LibRaw gets the white-balance multipliers.
type WBMode int

const (
	// WBCamera uses the as-shot multipliers recorded by the camera
	// (use_camera_wb, dcraw -w); LibRaw falls back to daylight and sets
	// Warnings&WarnBadCameraWB when the file has none.
	WBCamera WBMode = iota
	// WBDaylight uses LibRaw's daylight multipliers derived from the
	// camera matrix (color.pre_mul), LibRaw's default.
	WBDaylight
	// WBAuto lets LibRaw compute grey-world multipliers over the image
	// (use_auto_wb, dcraw -a).
	WBAuto
	// WBUser uses Params.Multipliers (libraw_output_params_t.user_mul,
	// dcraw -r).
	WBUser
)

// WarnBadCameraWB is LIBRAW_WARN_BAD_CAMERA_WB in Warnings: camera white
// balance was asked for but the file has none usable.
const WarnBadCameraWB = C.LIBRAW_WARN_BAD_CAMERA_WB

// Warnings returns LibRaw's process_warnings bit set (LIBRAW_WARN_*).
func (h *Handle) Warnings() uint32 {
	if h.lr == nil {
		return 0
	}
	return uint32(h.lr.process_warnings)
}

// Params are the LibRaw processing parameters rawbatch sets. Everything not
// named here is fixed: output colour = raw camera RGB (output_color 0),
// linear gamma (gamm 1,1), 16-bit output, no auto-brighten, no rotation by
// LibRaw (user_flip 0; orientation is applied by rawbatch).
type Params struct {
	Demosaic Demosaic
	WB       WBMode
	// Multipliers are the white-balance multipliers R, G, B, G2 for WBUser
	// (dimensionless; LibRaw normalises them so the smallest is 1).
	Multipliers [4]float32
	// Highlight is LibRaw's highlight mode: 0 clip, 1 unclip, 2 blend,
	// 3..9 rebuild.
	Highlight int
	// HalfSize decodes at half resolution without demosaic (half_size).
	HalfSize bool
	// Threads caps the OpenMP threads LibRaw's processing may use on this
	// handle's thread (omp_set_num_threads); 0 leaves OpenMP's default.
	Threads int
}

// Info is what LibRaw knows about an opened file before unpacking.
type Info struct {
	Make, Model, Lens string
	// ISO speed, shutter time in seconds, aperture as f-number, focal length
	// in mm (libraw_imgother_t); zero when unknown.
	ISO, Shutter, Aperture, FocalLength float64
	// Timestamp is the capture time (libraw_imgother_t.timestamp, parsed
	// by LibRaw as local wall time); zero when unknown.
	Timestamp time.Time
	// RawWidth, RawHeight are the full sensor size in pixels
	// (sizes.raw_width/raw_height); Width, Height the visible area
	// (sizes.width/height), whose top-left corner is at LeftMargin,
	// TopMargin of the raw image (sizes.left_margin/top_margin).
	RawWidth, RawHeight, Width, Height int
	LeftMargin, TopMargin              int
	// InsetCrop is LibRaw's inset crop of the raw image as left, top,
	// width, height in raw pixels (sizes.raw_inset_crops[0] of LibRaw
	// 0.21, sizes.raw_inset_crop of 0.20; filled from maker notes of some
	// formats, and from the DNG DefaultCrop by 0.21); zero when LibRaw has
	// none.
	InsetCrop [4]int
	// Flip is LibRaw's orientation code (sizes.flip): bit 2 transposes,
	// bit 1 mirrors vertically, bit 0 mirrors horizontally, applied in
	// that order (dcraw's flip_index). EXIF orientation o maps to
	// "50132467"[o&7]-'0'.
	Flip int
	// Colors is the number of colour channels (idata.colors), Filters the
	// CFA pattern code (idata.filters; 0 for linear/demosaiced data).
	Colors  int
	Filters uint32
	// Black and White are the black and white levels in raw units
	// (color.black, color.maximum).
	Black, White int
	// CamMul are the as-shot white-balance multipliers R, G, B, G2 (color.cam_mul);
	// PreMul the daylight multipliers derived from the camera matrix
	// (color.pre_mul).
	CamMul, PreMul [4]float64
	// RGBCam is LibRaw's 3×4 matrix from white-balanced camera RGB to
	// linear sRGB (color.rgb_cam); identity when LibRaw has no matrix.
	RGBCam [3][4]float64
	// CamXYZ is the 4×3 matrix from CIE XYZ to camera RGB (color.cam_xyz;
	// Adobe's ColorMatrix or the DNG ColorMatrix tag).
	CamXYZ [4][3]float64
	// Previews is the number of embedded previews LibRaw lists after
	// open (thumbs_list.thumbcount; LibRaw < 0.21: 1 or 0 from
	// thumbnail.tlength); PreviewWidth, PreviewHeight the largest one's
	// size in pixels as the file's tags give it (0 when they do not, and
	// for a JPEG they may differ from its frame), PreviewJPEG whether it
	// is a JPEG. Nothing of the previews is read.
	Previews, PreviewWidth, PreviewHeight int
	PreviewJPEG                           bool
	// DNGVersion is idata.dng_version, 0 for non-DNG files.
	DNGVersion uint32
	// BaselineExposure is the DNG BaselineExposure in EV
	// (color.dng_levels.baseline_exposure); 0 when absent.
	BaselineExposure float64
}

// Handle is one LibRaw processor (libraw_data_t). It must be used by a
// single goroutine that holds its OS thread (runtime.LockOSThread) from New
// to Close; calls from any other thread fail with ErrWrongThread.
type Handle struct {
	lr  *C.libraw_data_t
	ctl *C.rb_ctl
	// ctlMu orders Cancel, which any goroutine may call, against Close,
	// which frees ctl.
	ctlMu  sync.Mutex
	stream unsafe.Pointer // rb_stream of the open file, freed by Close or the next Open
	tid    C.long
	path   string
	info   *Info
}

// ErrWrongThread is returned when a Handle is used from a thread other than
// the one that created it.
var ErrWrongThread = errors.New("libraw: handle used from another OS thread")

// New creates a LibRaw handle on the calling OS thread. The caller must
// have locked the goroutine to its thread (runtime.LockOSThread) and must
// call Close on the same thread.
func New() (*Handle, error) {
	lr := C.rb_new(0)
	if lr == nil {
		return nil, errors.New("libraw: out of memory creating a handle")
	}
	ctl := (*C.rb_ctl)(C.calloc(1, C.size_t(unsafe.Sizeof(C.rb_ctl{}))))
	if ctl == nil {
		C.libraw_close(lr)
		return nil, errors.New("libraw: out of memory")
	}
	C.rb_install(lr, ctl)
	return &Handle{lr: lr, ctl: ctl, tid: C.rb_gettid()}, nil
}

// Close releases every LibRaw and C allocation of the handle. It is safe to
// call more than once.
func (h *Handle) Close() error {
	if h.lr == nil {
		return nil
	}
	if err := h.checkThread(); err != nil {
		return err
	}
	large := h.info == nil || int64(h.info.RawWidth)*int64(h.info.RawHeight)*8 >= trimBytes
	C.libraw_close(h.lr)
	h.freeStream()
	h.ctlMu.Lock()
	C.free(unsafe.Pointer(h.ctl))
	h.lr, h.ctl = nil, nil
	h.ctlMu.Unlock()
	// Give the freed raw and image buffers back to the system now: glibc
	// keeps blocks below its mmap threshold (up to 32 MiB) in its arenas.
	// Not after a small file: the trim walks every arena and unmaps pages
	// that the next file faults in and clears again (a fifth of a tiny
	// file's CPU time, in page faults and TLB flushes).
	if large {
		C.malloc_trim(0)
	}
	return nil
}

// trimBytes is the size of LibRaw's 4-channel image buffer (8 bytes a
// raw pixel) from which Close returns the freed memory to the system: a
// 2-megapixel raw.
const trimBytes = 16 << 20

// maxEOFReads is how many reads past the end of the file an unpack may make
// before the file counts as truncated. Complete files make none (measured on
// every file in testdata/raw); decoders that zero-fill a truncated file make
// thousands, one or more per remaining row.
const maxEOFReads = 8

func (h *Handle) freeStream() {
	if h.stream != nil {
		C.rb_stream_free(h.stream)
		h.stream = nil
	}
}

// Cancel asks LibRaw to stop processing at its next progress callback; the
// running call then fails with ErrCancelled. Unlike the other methods it may
// be called from any goroutine, also during or after Close (then it does
// nothing).
func (h *Handle) Cancel() {
	h.ctlMu.Lock()
	defer h.ctlMu.Unlock()
	if h.ctl != nil {
		C.rb_cancel(h.ctl)
	}
}

func (h *Handle) checkThread() error {
	if h.lr == nil {
		return errors.New("libraw: handle is closed")
	}
	if C.rb_gettid() != h.tid {
		return ErrWrongThread
	}
	return nil
}

// Open opens path (libraw_open_file) and reads its metadata. A black
// level above the white level fails it with ErrCorrupt (levelsError).
func (h *Handle) Open(path string) error {
	if err := h.checkThread(); err != nil {
		return err
	}
	h.path = path
	h.info = nil
	C.libraw_recycle(h.lr)
	h.freeStream()
	h.ctl.data_errors, h.ctl.data_offset, h.ctl.mem_errors = 0, 0, 0
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	h.stream = C.rb_stream_new(cpath)
	if h.stream == nil {
		return &Error{Op: "open", Msg: "cannot open file"}
	}
	if rc := C.rb_stream_open(h.lr, h.stream); rc != C.LIBRAW_SUCCESS {
		return h.codeError("open", rc)
	}
	if err := h.dataError("open"); err != nil {
		return err
	}
	if err := levelsError("open", &h.lr.color); err != nil {
		return err
	}
	info := h.readInfo()
	h.info = &info
	return nil
}

// Info returns the metadata read by Open.
func (h *Handle) Info() Info {
	if h.info == nil {
		return Info{}
	}
	return *h.info
}

// SetThreads caps the OpenMP threads LibRaw may use from now on on the
// handle's thread (omp_set_num_threads), for Unpack as for Process: its
// CR3 and compressed Fujifilm decoders are parallel regions too. n ≤ 0
// leaves the cap as it is.
func (h *Handle) SetThreads(n int) error {
	if err := h.checkThread(); err != nil {
		return err
	}
	if n > 0 {
		C.rb_set_threads(C.int(n))
	}
	return nil
}

// Unpack reads the raw pixel data (libraw_unpack). Damaged or truncated data
// that LibRaw reports only through its data-error callback fails here with
// an error wrapping ErrCorrupt, and so do libjpeg's corrupt-data warnings
// when this process's stderr is a file it can read back (a worker's: see
// jpegwarn.go): "corrupt or truncated data: damaged JPEG data (libjpeg:
// Corrupt JPEG data: bad Huffman code)"; and so do a lossless-JPEG raw
// LibRaw's decoder cannot start, or whose frame claims more samples than
// its tile (fastraw.cpp, with the bundled LibRaw), and a black level the
// masked pixels put above the white level.
func (h *Handle) Unpack() error {
	if err := h.checkThread(); err != nil {
		return err
	}
	C.rb_stream_reset(h.stream)
	mark := stderrMark()
	if rc := C.rb_unpack(h.lr); rc != C.LIBRAW_SUCCESS {
		return h.codeError("unpack", rc)
	}
	if d := C.GoString(C.rb_damage(h.lr)); d != "" {
		return &Error{Op: "unpack", Msg: d, kind: rawerr.ErrCorrupt}
	}
	if err := h.dataError("unpack"); err != nil {
		return err
	}
	if w := jpegCorruption(stderrSince(mark)); w != "" {
		return &Error{Op: "unpack", Msg: "damaged JPEG data (libjpeg: " + w + ")", kind: rawerr.ErrCorrupt}
	}
	if n := int64(C.rb_stream_eof_reads(h.stream)); n > maxEOFReads {
		return &Error{Op: "unpack", Msg: fmt.Sprintf("file ends before the image data does (%d reads past the end)", n), kind: rawerr.ErrCorrupt}
	}
	// The black level from the masked pixels (crop_masked_pixels).
	return levelsError("unpack", &h.lr.rawdata.color)
}

// Process sets p and runs LibRaw's processing (libraw_dcraw_process):
// black subtraction, white balance, demosaic, and conversion to 16-bit
// linear camera RGB.
func (h *Handle) Process(p Params) error {
	if err := h.checkThread(); err != nil {
		return err
	}
	o := &h.lr.params
	o.user_qual = C.int(p.Demosaic)
	o.output_color = 0 // raw camera RGB: rawbatch applies the camera matrix
	o.output_bps = 16
	o.gamm[0], o.gamm[1] = 1, 1 // linear
	o.no_auto_bright = 1
	o.user_flip = 0 // rawbatch applies the orientation itself
	o.highlight = C.int(p.Highlight)
	o.half_size = 0
	if p.HalfSize {
		o.half_size = 1
	}
	o.use_camera_wb, o.use_auto_wb = 0, 0
	for i := range 4 {
		o.user_mul[i] = 0
	}
	switch p.WB {
	case WBCamera:
		o.use_camera_wb = 1
	case WBAuto:
		o.use_auto_wb = 1
	case WBUser:
		for i := range 4 {
			o.user_mul[i] = C.float(p.Multipliers[i])
		}
	}
	if p.Threads > 0 {
		C.rb_set_threads(C.int(p.Threads))
	}
	if rc := C.libraw_dcraw_process(h.lr); rc != C.LIBRAW_SUCCESS {
		return h.codeError("process", rc)
	}
	return h.dataError("process")
}

// OutputSize returns the size in pixels of the image LibRaw would produce,
// after Fuji rotation, pixel-aspect stretch and the rotation by Flip
// (libraw_adjust_sizes_info_only; the "Output size" of raw-identify -v).
// It changes the handle's size fields, so the handle must not be unpacked
// afterwards: use it on a handle opened for information only.
func (h *Handle) OutputSize() (w, h2 int, err error) {
	if err := h.checkThread(); err != nil {
		return 0, 0, err
	}
	if rc := C.libraw_adjust_sizes_info_only(h.lr); rc != C.LIBRAW_SUCCESS {
		return 0, 0, h.codeError("adjust sizes", rc)
	}
	return int(h.lr.sizes.iwidth), int(h.lr.sizes.iheight), nil
}

// ProcessedSize returns the width, height and channel count of the
// processed image (sizes.iwidth, sizes.iheight, idata.colors), unrotated.
func (h *Handle) ProcessedSize() (w, h2, colors int) {
	return int(h.lr.sizes.iwidth), int(h.lr.sizes.iheight), int(h.lr.idata.colors)
}

// CopyImage copies the processed image into dst as interleaved float32
// linear camera RGB in [0,1] (16-bit value / 65535), W×H×colors, rows top to
// bottom, not rotated. It allocates dst when it is too small and returns it
// with its dimensions. The LibRaw image buffers are released afterwards
// (libraw_recycle), so the handle must be opened again for another decode.
func (h *Handle) CopyImage(dst []float32) (pix []float32, w, h2, colors int, err error) {
	if err := h.checkThread(); err != nil {
		return nil, 0, 0, 0, err
	}
	if h.lr.image == nil {
		return nil, 0, 0, 0, errors.New("libraw: no processed image")
	}
	w, h2, colors = h.ProcessedSize()
	if colors < 1 || colors > 4 {
		return nil, 0, 0, 0, fmt.Errorf("libraw: unexpected colour count %d", colors)
	}
	n := w * h2 * colors
	if cap(dst) < n {
		dst = make([]float32, n)
	}
	dst = dst[:n]
	if n > 0 {
		C.rb_copy_image(h.lr, (*C.float)(unsafe.Pointer(&dst[0])), C.int(colors))
	}
	runtime.KeepAlive(dst)
	C.libraw_recycle(h.lr)
	return dst, w, h2, colors, nil
}

func (h *Handle) readInfo() Info {
	lr := h.lr
	var in Info
	in.Make = C.GoString(&lr.idata.make[0])
	in.Model = C.GoString(&lr.idata.model[0])
	in.Lens = C.GoString(&lr.lens.Lens[0])
	in.ISO = float64(lr.other.iso_speed)
	in.Shutter = float64(lr.other.shutter)
	in.Aperture = float64(lr.other.aperture)
	in.FocalLength = float64(lr.other.focal_len)
	if ts := int64(lr.other.timestamp); ts > 0 {
		in.Timestamp = time.Unix(ts, 0)
	}
	s := &lr.sizes
	in.RawWidth, in.RawHeight = int(s.raw_width), int(s.raw_height)
	in.Width, in.Height = int(s.width), int(s.height)
	in.LeftMargin, in.TopMargin = int(s.left_margin), int(s.top_margin)
	var ic [4]C.int
	C.rb_inset_crop(lr, &ic[0])
	if ic[0] != 0xffff && ic[1] != 0xffff && ic[2] > 0 && ic[3] > 0 {
		in.InsetCrop = [4]int{int(ic[0]), int(ic[1]), int(ic[2]), int(ic[3])}
	}
	in.Flip = int(s.flip)
	in.Colors = int(lr.idata.colors)
	in.Filters = uint32(lr.idata.filters)
	in.Black, in.White = int(lr.color.black), int(lr.color.maximum)
	for i := range 4 {
		in.CamMul[i] = float64(lr.color.cam_mul[i])
		in.PreMul[i] = float64(lr.color.pre_mul[i])
	}
	for i := range 3 {
		for j := range 4 {
			in.RGBCam[i][j] = float64(lr.color.rgb_cam[i][j])
		}
	}
	for i := range 4 {
		for j := range 3 {
			in.CamXYZ[i][j] = float64(lr.color.cam_xyz[i][j])
		}
	}
	var n, tw, th, jpeg C.int
	C.rb_thumb_largest(lr, &n, &tw, &th, &jpeg)
	in.Previews, in.PreviewWidth, in.PreviewHeight, in.PreviewJPEG = int(n), int(tw), int(th), jpeg != 0
	in.DNGVersion = uint32(lr.idata.dng_version)
	in.BaselineExposure = float64(lr.color.dng_levels.baseline_exposure)
	return in
}

// Identify opens path on a new handle, reads its metadata and LibRaw's
// output size (OutputSize) without unpacking pixel data, and closes the
// handle. It locks the calling goroutine to its OS thread for the duration.
// Errors are those of Open.
func Identify(path string) (in Info, outW, outH int, err error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	h, err := New()
	if err != nil {
		return Info{}, 0, 0, err
	}
	defer h.Close()
	if err := h.Open(path); err != nil {
		return Info{}, 0, 0, err
	}
	in = h.Info()
	outW, outH, err = h.OutputSize()
	return in, outW, outH, err
}

// MallocStats returns glibc's malloc statistics for the process: bytes in
// use (mallinfo2 uordblks + hblkhd) and free bytes kept in its arenas
// (fordblks). Tests use it to show that conversions leak no C memory.
func MallocStats() (inUse, freeHeld int64) {
	var a, b C.longlong
	C.rb_malloc_stats(&a, &b)
	return int64(a), int64(b)
}

// ReleaseFreeMemory returns the free memory glibc keeps in its arenas to
// the system (malloc_trim(0), which walks every arena).
func ReleaseFreeMemory() { C.malloc_trim(0) }

// The native faults of package fault (fault.Crash, fault.Hang,
// fault.OpenMPThreads): only the test-only hooks of internal/faulttest call
// them.
func init() {
	fault.Crash = func() { C.rb_crash() }
	fault.Hang = func() { C.rb_hang() }
	fault.OpenMPThreads = MaxThreads
}

// MaxThreads returns how many OpenMP threads a parallel region of LibRaw
// started from the calling OS thread would use now (omp_get_max_threads:
// the last Params.Threads a Process on this thread set, else OpenMP's
// default), for tests that check a conversion's thread cap reached LibRaw.
func MaxThreads() int { return int(C.rb_max_threads()) }

// TileBatchBytes bounds the compressed tile data (bytes) an Unpack holds
// at once while it decodes a tiled lossless-JPEG DNG or ARW itself
// (fastraw.cpp); 0 when it leaves them to LibRaw (a system LibRaw).
func TileBatchBytes() int64 { return int64(C.rb_tile_batch_bytes()) }

// fastTiles is the number of tiles ljpeg.c decoded in the handle's last
// Unpack (0: LibRaw's own decoder did).
func (h *Handle) fastTiles() int { return int(C.rb_fast_tiles(h.lr)) }

// rbSetFast turns ljpeg.c's decoding of lossless-JPEG tiles on or off for
// every handle (on by default; tests compare it with LibRaw's).
func rbSetFast(on bool) {
	v := C.int(0)
	if on {
		v = 1
	}
	C.rb_set_fast(v)
}
