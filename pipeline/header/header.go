// Package header reads a camera RAW file's header without decoding pixel
// data, so that a scheduler can size a memory budget before decoding.
//
// Sources, in order:
//
//  1. TIFF-based files ("II*\0", "MM\0*", Olympus "IIRO"/"IIRS"/"MMOR",
//     Panasonic "IIU\0"): a bounded walk of the IFD0 chain, SubIFDs (330) and
//     the Exif IFD (34665); EXIF fields through goexif on a sanitised copy.
//  2. Canon CR3 (ISO BMFF, brand "crx "): a bounded box walk; CMT1..CMT4
//     are TIFF blocks, the raw track's CRAW/CMP1 box is the crx header.
//  3. Fujifilm RAF, Minolta MRW, Sigma X3F and Canon CRW headers, parsed
//     for what they state plainly.
//  4. LibRaw 0.20's own open (libraw_open_datastream, then
//     libraw_adjust_sizes_info_only; no unpack) through
//     pipeline/internal/libraw.Identify: it gives the exact output size
//     and identifies headerless files (Kodak, ...) by their size. Read
//     calls it in process; ReadWith lets the caller run it elsewhere
//     (rawbatch's parent process uses a helper process it can kill).
//
// Width and Height are LibRaw's output size whenever LibRaw opens the file
// (raw-identify -v "Output size"); otherwise they are computed from the
// header (see Header).
//
// Robustness: at most MaxRead bytes are read per file (LibRaw's reads during
// its open excluded), every offset and count from the file is checked
// against the file size before use, IFD and box walks stop at cycles and
// fixed limits, and header claims the file cannot hold are rejected with
// rawerr.ErrCorrupt before anything proportional to them is allocated.
package header

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/rawbatch/rawbatch/internal/fault"
	"github.com/rawbatch/rawbatch/internal/rawerr"
	"github.com/rawbatch/rawbatch/pipeline/internal/libraw"
)

// Header is what Read found. Sizes are in pixels.
type Header struct {
	Path string
	// Format is the container, upper case, from the magic bytes and Make
	// (never the extension): "DNG", "CR3", "CR2", "CRW", "NEF", "ARW",
	// "RAF", "RW2", "ORF", "PEF", "SRW", "IIQ", "MRW", "X3F", "3FR", "MOS",
	// "DCR", "ERF", "MEF", "TIFF"; headerless files LibRaw identifies by
	// size are "<MAKE>-RAW" (e.g. "KODAK-RAW").
	Format string
	// Make and Model: LibRaw's normalised camera names (raw-identify's
	// "Camera:" line, imgdata.idata.make/model) when LibRaw opens the file,
	// else the names written in the file.
	Make, Model string
	// RawWidth, RawHeight: the full sensor/raw image size. From the
	// full-resolution raw IFD (ImageWidth/ImageLength), the CR3 raw
	// track's CMP1 header, Canon SensorInfo (CR2, CRW), Panasonic
	// SensorWidth/Height (RW2), the RAF CFA header (0x100), MRW PRD or the
	// X3F raw section; else LibRaw's sizes.raw_width/raw_height.
	RawWidth, RawHeight int
	// Width, Height: the size of the image rawbatch produces with --crop
	// sensor, after rotation (with --crop camera, pipeline.DecodedSize
	// takes the picture area off it). When LibRaw opens the file this is its output size
	// (sizes.iwidth/iheight after libraw_adjust_sizes_info_only, i.e. the
	// visible area, Fuji rotation, pixel aspect and the flip). Otherwise:
	// DNG ActiveArea (50829, top/left/bottom/right) else the raw IFD's full
	// size, as LibRaw 0.20 does (it does not apply DefaultCrop); Canon
	// SensorInfo borders (CR2/CR3/CRW); Panasonic sensor borders (RW2);
	// RAF cropped size (0x111); X3F header size; else the raw size; then
	// swapped when Orientation is 5..8.
	Width, Height int
	// Orientation is the EXIF/TIFF Orientation (274) 1..8 of the main
	// image: IFD0's, or the raw IFD's when IFD0 has none or 1 (LibRaw's
	// rule); CMT1's for CR3; else derived from LibRaw's flip; 1 when absent.
	Orientation int
	// BitsPerSample, SamplesPerPixel of the raw image (TIFF 258/277 of the
	// raw IFD; CMP1 nBits and 1 for CR3; lossless-JPEG precision for CR2).
	BitsPerSample, SamplesPerPixel int
	// Compression is the TIFF Compression (259) of the raw IFD (1 none,
	// 7 lossless JPEG, 34892 lossy JPEG DNG, 32767 Sony, 34713 Nikon,
	// 65535 Pentax, ...; 1 when the tag is absent), 0 when not TIFF-based.
	Compression int
	// Variant: "CRAW" (lossy C-RAW) or "RAW" (lossless) for CR3, from the
	// CMP1 ImageLevels (wavelet levels > 0 = C-RAW); for ARW "lossless",
	// "compressed" or "uncompressed" from SonyRawFileType (0x7000) or the
	// raw IFD Compression (7, 32767, 1); "" otherwise.
	Variant string
	// CFA is true for a mosaic (Bayer, X-Trans) sensor, one sample per raw
	// pixel: LibRaw's idata.filters != 0 when LibRaw opens the file, else
	// SamplesPerPixel == 1.
	CFA bool
	// EXIF holds the capture metadata (see EXIF).
	EXIF EXIF
	// BytesRead is how many bytes of the file Read itself read (at most
	// MaxRead). LibRaw's own reads during its open are not included.
	BytesRead int64

	// DefaultCrop is DNG DefaultCropOrigin (50719) and DefaultCropSize
	// (50720) of the raw IFD as x, y, w, h in raw pixels (rounded), zero
	// when absent. LibRaw 0.20 does not apply it to its output size
	// (measured: exiftool_DNG.dng outputs ActiveArea 3474×2314, not the
	// 3456×2304 DefaultCrop), so neither does Width/Height.
	DefaultCrop [4]int
	// ActiveArea is DNG ActiveArea (50829) of the raw IFD as top, left,
	// bottom, right in raw pixels, zero when absent.
	ActiveArea [4]int
	// SensorArea is the picture area Canon's SensorInfo states (maker
	// note 0xE0 of CR2 and CR3, CIFF 0x1031 of CRW): left and top border,
	// right−left+1, bottom−top+1, as x, y, w, h in raw pixels; zero when
	// absent or malformed.
	SensorArea [4]int
	// VisibleArea is LibRaw's visible area (what Width/Height are made
	// from) as x, y, w, h in raw pixels: sizes.left_margin, top_margin,
	// width, height, unrotated; InsetCrop is LibRaw's inset crop in raw
	// pixels (libraw.Info.InsetCrop). Zero when LibRaw did not open the
	// file. pipeline's crop stage chooses the picture area from these
	// (docs/crop.md).
	VisibleArea, InsetCrop [4]int
	// ProfileToneCurve is the DNG ProfileToneCurve (50940) of IFD0: x, y
	// pairs in [0, 1] (nil when absent or malformed); BaselineExposureOffset
	// the DNG BaselineExposureOffset (51109) in EV, 0 when absent.
	ProfileToneCurve       []float32 `json:",omitempty"`
	BaselineExposureOffset float64   `json:",omitempty"`
	// OpcodeLists locates the DNG opcode lists of the raw IFD (nil when
	// it has none, or the file is not a DNG).
	OpcodeLists *DNGOpcodeLists `json:",omitempty"`
	// NoPreview: a DNG whose IFDs hold no image besides the raw data
	// (no preview IFD, no JPEG thumbnail), so it has no embedded preview;
	// false when it has one or the format does not tell.
	NoPreview bool `json:",omitempty"`
	// CRX is the CR3 raw track's crx header (CMP1), nil for other formats.
	CRX *CRX
	// SizeFromLibRaw reports that Width/Height are LibRaw's output size.
	SizeFromLibRaw bool
	// Previews is the number of embedded previews LibRaw lists,
	// PreviewWidth × PreviewHeight the largest one's size in pixels as the
	// file's tags give it (0 when they do not), PreviewJPEG whether it is
	// a JPEG (libraw.Info's fields); all zero unless SizeFromLibRaw.
	Previews, PreviewWidth, PreviewHeight int  `json:",omitempty"`
	PreviewJPEG                           bool `json:",omitempty"`
	// ColourMatrix reports, when LibRaw opened the file (SizeFromLibRaw),
	// whether it has a colour matrix for the camera (from the file or its
	// own table); without one, conversion falls back to an identity matrix
	// and the colours are wrong.
	ColourMatrix bool
	// LibRawErr is why LibRaw could not open the file (wrapping a rawerr
	// sentinel), nil when it did or was not asked.
	LibRawErr error
	// Unsupported is non-empty when the file is a variant that the linked
	// LibRaw (its version read at run time) opens but is known not to
	// decode, and names it and the LibRaw it needs: "lossy CR3 (C-RAW, crx
	// version 0x200) needs LibRaw 0.21 or later", "Sony lossless-compressed
	// ARW needs LibRaw 0.21 or later".
	Unsupported string
	// Warnings are problems that did not stop Read: a recovered goexif
	// panic, EXIF skipped as unsafe, an unreadable maker note.
	Warnings []string
}

// Plausibility bounds for the full-resolution image: each side in
// 1..maxSide pixels, and at least minBitsPerPixel bits of file per pixel
// (the strongest real compression measured, lossy DNG and C-RAW, needs
// above 1 bit per pixel; 0.02 leaves a factor 50).
const (
	maxSide         = 65535
	minBitsPerPixel = 0.02
)

// Read reads the header of the RAW file at path. It reads at most MaxRead
// bytes itself, then asks LibRaw to open the file without unpacking.
//
// The returned Header is never nil; on error it holds what was found.
// Errors wrap rawerr sentinels and name the path:
//   - ErrEmpty: the file has no bytes;
//   - ErrNotRaw: another kind of file (JPEG, PNG, text, a TIFF without raw
//     data, ...) that LibRaw does not open either;
//   - ErrCorrupt: the header claims an image the file cannot hold (a side
//     outside 1..65535, fewer than 0.02 bit per claimed pixel, raw data or
//     its directory past the end of the file). Width/Height are still
//     filled (from LibRaw where it opens the file) unless a side is out
//     of range, in which case LibRaw is not asked;
//   - ErrUnsupported: a RAW container whose image size neither the header
//     nor LibRaw gives.
func Read(path string) (*Header, error) { return readFile(path, true, nil) }

// ErrTruncated is wrapped by the error of a file that ends before data its
// header points to: damaged, or a copy not finished yet (the runner tells
// them apart by the file's age and whether it changed).
var ErrTruncated = errors.New("the file ends before its data")

// truncation is the reason of a truncated file ("the raw image data ends
// at byte N, past the end of the M-byte file"); it is ErrTruncated.
type truncation string

func (t truncation) Error() string        { return string(t) }
func (t truncation) Is(target error) bool { return target == ErrTruncated }

// IdentifyFunc opens a file with LibRaw without unpacking it and returns
// what LibRaw read (as LibRawIdentify does): its metadata and its output
// width and height in pixels. Errors are LibRaw's (wrapping rawerr kinds)
// or ones wrapping ErrHeaderTimeout.
type IdentifyFunc func(path string) (in Identity, outW, outH int, err error)

// Identity is what Read takes from LibRaw's identify (libraw_data_t after
// open_file and adjust_sizes_info_only): header's own copy of the fields of
// pipeline/internal/libraw's Info that it uses, so that callers outside
// pipeline (a header helper process and its parent) carry it without
// importing the binding. Units and sources as in libraw.Info.
type Identity struct {
	Make, Model, Lens string
	// ISO speed, shutter time in seconds, aperture as f-number, focal
	// length in mm; zero when unknown.
	ISO, Shutter, Aperture, FocalLength float64
	Timestamp                           time.Time
	// Sensor size, visible area and its top-left corner, in raw pixels.
	RawWidth, RawHeight, Width, Height, LeftMargin, TopMargin int
	// InsetCrop is LibRaw's inset crop as left, top, width, height in raw
	// pixels; zero when it has none.
	InsetCrop [4]int
	// Flip is LibRaw's orientation code (sizes.flip).
	Flip int
	// Filters is the CFA pattern code (idata.filters; 0 for linear data).
	Filters         uint32
	HasColourMatrix bool
	// Embedded previews: their count and the largest one's size and
	// encoding (libraw.Info.Previews, PreviewWidth, ...).
	Previews, PreviewWidth, PreviewHeight int
	PreviewJPEG                           bool
}

// identityOf copies the fields header uses out of LibRaw's Info.
func identityOf(in libraw.Info) Identity {
	return Identity{Make: in.Make, Model: in.Model, Lens: in.Lens,
		ISO: in.ISO, Shutter: in.Shutter, Aperture: in.Aperture, FocalLength: in.FocalLength, Timestamp: in.Timestamp,
		RawWidth: in.RawWidth, RawHeight: in.RawHeight, Width: in.Width, Height: in.Height,
		LeftMargin: in.LeftMargin, TopMargin: in.TopMargin, InsetCrop: in.InsetCrop, Flip: in.Flip,
		Filters: in.Filters, HasColourMatrix: in.HasColourMatrix(),
		Previews: in.Previews, PreviewWidth: in.PreviewWidth, PreviewHeight: in.PreviewHeight, PreviewJPEG: in.PreviewJPEG}
}

// ReadWith is Read with LibRaw's open done by identify instead of in this
// process: rawbatch's parent process passes one that runs it in a helper
// process it can kill (batch.HeaderReader), since a C call that never
// returns cannot be stopped in process. A nil identify is Read's own
// in-process call, bounded by IdentifyTimeout.
func ReadWith(path string, identify IdentifyFunc) (*Header, error) {
	return readFile(path, true, identify)
}

// LibRawIdentify is the LibRaw call of Read: libraw.Identify (open, then
// libraw_adjust_sizes_info_only; no unpack) of path, in this process and
// unbounded. It is what a header helper process runs for its parent.
func LibRawIdentify(path string) (Identity, int, int, error) {
	fault.At(fault.Header, path)
	in, w, h, err := libraw.Identify(path)
	return identityOf(in), w, h, err
}

// readFile is Read; withLibRaw false skips LibRaw (tests use it to check
// the header-only computation against LibRaw); identify nil means in
// process.
func readFile(path string, withLibRaw bool, identify IdentifyFunc) (*Header, error) {
	h := &Header{Path: path, Orientation: 1}
	f, st, err := openRegular(path)
	if err != nil {
		return h, fmt.Errorf("%s: %w", path, err)
	}
	defer f.Close()
	size := st.Size()
	if size == 0 {
		return h, fmt.Errorf("%s: %w", path, rawerr.ErrEmpty)
	}
	src, err := newSource(f, size)
	defer src.release()
	h.BytesRead = src.n
	if err != nil {
		return h, fmt.Errorf("%s: reading: %w", path, err)
	}
	err = h.read(src, withLibRaw, identify)
	h.BytesRead = src.n
	return h, err
}

func (h *Header) read(src *source, withLibRaw bool, identify IdentifyFunc) error {
	path := h.Path
	sig := recognise(src.head)
	if sig.foreign != "" {
		return fmt.Errorf("%s: %w: it is %s", path, rawerr.ErrNotRaw, sig.foreign)
	}
	kind := sig.kind
	o := &own{}
	switch kind {
	case "TIFF":
		parseTIFF(src, o)
	case "CR3":
		parseCR3File(src, o)
	case "RAF":
		parseRAF(src, o)
	case "MRW":
		parseMRW(src, o)
	case "X3F":
		parseX3F(src, o)
	case "CRW":
		parseCRW(src, o)
	}
	if o.exifBlob[1] > 0 && !o.haveExif {
		if b, err := src.bytes(o.exifBlob[0], min(o.exifBlob[1], maxExifBlob)); err == nil {
			o.exif = decodeExif(b, kind+" EXIF", o.exifBlobIsCanon)
			o.haveExif = true
			o.warnings = append(o.warnings, o.exif.warnings...)
			if o.model == "" && o.exif.Make != "" {
				o.make, o.model = o.exif.Make, o.exif.Model
			}
		}
	}
	if o.orientation == 0 {
		o.orientation = o.exif.orientation
	}
	h.Warnings = append(h.Warnings, o.warnings...)
	h.Format = formatName(kind, o)
	h.apply(o)
	h.CFA = h.SamplesPerPixel <= 1

	// A claimed full-resolution side outside 1..65535 is impossible: stop
	// before anyone (LibRaw included) acts on it.
	if o.rawW != 0 || o.rawH != 0 {
		if o.rawW <= 0 || o.rawH <= 0 || o.rawW > maxSide || o.rawH > maxSide {
			return fmt.Errorf("%s: %w: claims a %d×%d-pixel image (each side must be 1..%d)", path, rawerr.ErrCorrupt, o.rawW, o.rawH, maxSide)
		}
	}
	var corrupt error
	if msg := density(o.rawW, o.rawH, src.size); msg != "" {
		corrupt = fmt.Errorf("%s: %w: %s", path, rawerr.ErrCorrupt, msg)
	} else if o.truncated != "" {
		corrupt = fmt.Errorf("%s: %w: %w", path, rawerr.ErrCorrupt, truncation(o.truncated))
	}

	lerr := errNotAsked
	var info Identity
	var ow, oh int
	if withLibRaw && !o.unsafeForLibRaw {
		if identify == nil {
			identify = identifyInProcess
		}
		info, ow, oh, lerr = identify(path)
		if errors.Is(lerr, ErrHeaderTimeout) && corrupt == nil {
			corrupt = fmt.Errorf("%s: %w", path, lerr)
		}
	}
	switch {
	case lerr == errNotAsked:
	case lerr != nil:
		h.LibRawErr = lerr
	default:
		h.fromLibRaw(info, ow, oh, o)
		if corrupt == nil && o.rawW == 0 {
			if msg := density(int64(info.RawWidth), int64(info.RawHeight), src.size); msg != "" {
				corrupt = fmt.Errorf("%s: %w: %s", path, rawerr.ErrCorrupt, msg)
			}
		}
	}
	if kind == "" {
		if lerr != nil {
			if isText(src.head) {
				return fmt.Errorf("%s: %w: it is a text file", path, rawerr.ErrNotRaw)
			}
			// LibRaw's own code for an unknown file is "unsupported";
			// quoting it would contradict "not a raw file".
			return fmt.Errorf("%s: %w: no RAW signature, and LibRaw %s does not recognise it either", path, rawerr.ErrNotRaw, libraw.ShortVersion())
		}
		h.Format = strings.ToUpper(strings.ReplaceAll(h.Make, " ", "-")) + "-RAW"
	}
	if corrupt != nil {
		return corrupt
	}
	if h.Width <= 0 || h.Height <= 0 {
		if kind == "TIFF" && h.Format == "TIFF" {
			return fmt.Errorf("%s: %w: a TIFF image without raw sensor data, and LibRaw does not open it (%v)", path, rawerr.ErrNotRaw, lerr)
		}
		return fmt.Errorf("%s: %w: %s with no image size in its header, and LibRaw does not open it (%v)", path, rawerr.ErrUnsupported, h.Format, lerr)
	}
	return nil
}

var errNotAsked = fmt.Errorf("%w: LibRaw not asked", rawerr.ErrUnsupported)

// IdentifyTimeout bounds LibRaw's open of one file (normally well under
// 1 ms). LibRaw 0.20.2 can loop for minutes or forever on some damaged
// files (a cut Phase One IIQ directory is one, caught before LibRaw is
// asked; some damaged CR3 files are others). A C call cannot be
// interrupted: in process (Read), after IdentifyTimeout Read fails the file
// and leaves that LibRaw call running on its thread, which is why
// rawbatch's parent process reads headers through ReadWith and a helper
// process that it kills instead (batch.HeaderReader, which uses the same
// bound).
var IdentifyTimeout = 2 * time.Second

// ErrHeaderTimeout is wrapped by the error of a file whose LibRaw header
// open did not finish within its time limit; that error also wraps
// rawerr.ErrCorrupt.
var ErrHeaderTimeout = errors.New("reading its header timed out")

// HeaderTimeoutError is the error of a LibRaw header open that did not
// finish within d: "corrupt or truncated data: reading its header timed
// out after 2 s: damaged file?", wrapping rawerr.ErrCorrupt and
// ErrHeaderTimeout. detail, when not empty, is added in parentheses.
func HeaderTimeoutError(d time.Duration, detail string) error {
	secs := strconv.FormatFloat(math.Round(d.Seconds()*10)/10, 'f', -1, 64)
	if detail != "" {
		detail = " (" + detail + ")"
	}
	return fmt.Errorf("%w: %w after %s s: damaged file?%s", rawerr.ErrCorrupt, ErrHeaderTimeout, secs, detail)
}

// identifyInProcess is LibRawIdentify bounded by IdentifyTimeout.
func identifyInProcess(path string) (Identity, int, int, error) {
	type result struct {
		in   Identity
		w, h int
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		in, w, h, err := LibRawIdentify(path)
		ch <- result{in, w, h, err}
	}()
	t := time.NewTimer(IdentifyTimeout)
	defer t.Stop()
	select {
	case r := <-ch:
		return r.in, r.w, r.h, r.err
	case <-t.C:
		return Identity{}, 0, 0, HeaderTimeoutError(IdentifyTimeout, "LibRaw's open did not return; the call is left running")
	}
}

// density returns why w×h pixels cannot be in size bytes, or "".
func density(w, hgt, size int64) string {
	if w <= 0 || hgt <= 0 {
		return ""
	}
	if float64(w)*float64(hgt)*minBitsPerPixel > float64(size)*8 {
		return fmt.Sprintf("claims %d×%d pixels in %d bytes (under %.2g bit per pixel)", w, hgt, size, minBitsPerPixel)
	}
	return ""
}

// apply sets the header fields from the own-parser result.
func (h *Header) apply(o *own) {
	h.Make, h.Model = o.make, o.model
	h.RawWidth, h.RawHeight = int(o.rawW), int(o.rawH)
	if o.orientation >= 1 && o.orientation <= 8 {
		h.Orientation = o.orientation
	}
	h.BitsPerSample, h.SamplesPerPixel = o.bps, o.samples
	h.Compression = o.compression
	h.Variant = o.variant
	h.CRX = o.crx
	h.ActiveArea = o.activeArea
	h.DefaultCrop = o.defaultCrop
	h.SensorArea = o.sensorArea
	h.ProfileToneCurve, h.BaselineExposureOffset = o.look.toneCurve, o.look.exposureOffset
	h.OpcodeLists = o.opcodes
	h.NoPreview = o.noPreview
	h.Unsupported = o.unsupported
	if o.haveExif {
		h.EXIF = o.exif.EXIF
	}
	if h.EXIF.Make == "" {
		h.EXIF.Make, h.EXIF.Model = o.make, o.model
	}
	w, hh := o.w, o.h
	if w <= 0 || hh <= 0 {
		w, hh = o.rawW, o.rawH
	}
	if w > 0 && hh > 0 && w <= maxSide && hh <= maxSide {
		if h.Orientation >= 5 {
			w, hh = hh, w
		}
		h.Width, h.Height = int(w), int(hh)
	}
}

// flipToOrientation inverts LibRaw's EXIF-orientation→flip map
// "50132467"[o&7]-'0' (libraw_internal.h, tiff.cpp).
var flipToOrientation = [8]int{1, 2, 4, 3, 5, 8, 6, 7}

func (h *Header) fromLibRaw(in Identity, ow, oh int, o *own) {
	h.CFA = in.Filters != 0
	if ow > 0 && oh > 0 {
		h.Width, h.Height = ow, oh
		h.SizeFromLibRaw = true
		h.ColourMatrix = in.HasColourMatrix
		h.Previews, h.PreviewWidth, h.PreviewHeight, h.PreviewJPEG = in.Previews, in.PreviewWidth, in.PreviewHeight, in.PreviewJPEG
		h.VisibleArea = [4]int{in.LeftMargin, in.TopMargin, in.Width, in.Height}
		h.InsetCrop = in.InsetCrop
	}
	if in.Make != "" {
		h.Make, h.Model = in.Make, in.Model
	}
	if o.rawW == 0 && in.RawWidth > 0 {
		h.RawWidth, h.RawHeight = in.RawWidth, in.RawHeight
	}
	if o.orientation == 0 && in.Flip >= 0 && in.Flip < 8 {
		h.Orientation = flipToOrientation[in.Flip]
	}
	e := &h.EXIF
	if e.Lens == "" {
		e.Lens = in.Lens
	}
	if e.Make == "" && e.Model == "" {
		// LibRaw's names only for a file that names no camera itself (a
		// headerless raw), never LibRaw's Make next to the file's Model:
		// for a DNG with only UniqueCameraModel "Test Camera", LibRaw
		// makes up Make "Test" by splitting it.
		e.Make, e.Model = in.Make, in.Model
	}
	if o.haveExif && (o.exif.Make != "" || !o.exif.DateTime.IsZero()) {
		return // the file's own EXIF was read: keep it as written
	}
	if e.Lens == "" {
		e.Lens = in.Lens
	}
	if e.DateTime.IsZero() && !in.Timestamp.IsZero() {
		// LibRaw made it with mktime: local wall time, kept as that wall
		// clock in UTC like the EXIF strings (Dates.Capture).
		e.DateTime = wallClock(in.Timestamp.Local())
		if h.Format == "CRW" {
			// CIFF stores the camera's wall-clock time as seconds since
			// 1970 (tag 0x180e, read as is by LibRaw's parse_ciff): it is
			// that wall time in UTC, whatever the machine's time zone.
			e.DateTime = in.Timestamp.UTC()
		}
	}
	if e.ExposureTime == 0 && in.Shutter > 0 {
		e.ExposureTime = in.Shutter
	}
	if e.FNumber == 0 && in.Aperture > 0 {
		e.FNumber = in.Aperture
	}
	if e.FocalLength == 0 && in.FocalLength > 0 {
		e.FocalLength = in.FocalLength
	}
	if e.ISO == 0 && in.ISO > 0 && in.ISO < math.MaxInt32 {
		e.ISO = int(in.ISO)
	}
}

// formatName names the container from its kind and Make.
func formatName(kind string, o *own) string {
	switch kind {
	case "TIFF":
	case "":
		return ""
	default:
		return kind
	}
	mk := strings.ToUpper(o.make)
	switch {
	case o.iiq:
		return "IIQ"
	case o.dng:
		return "DNG"
	case o.cr2:
		return "CR2"
	case o.orf:
		return "ORF"
	case o.rw2:
		if strings.HasPrefix(mk, "LEICA") {
			return "RWL"
		}
		return "RW2"
	case strings.HasPrefix(mk, "NIKON"):
		return "NEF"
	case strings.HasPrefix(mk, "SONY"):
		return "ARW"
	case strings.HasPrefix(mk, "PENTAX"), strings.HasPrefix(mk, "RICOH"), strings.HasPrefix(mk, "ASAHI"):
		return "PEF"
	case strings.HasPrefix(mk, "OLYMPUS"), strings.HasPrefix(mk, "OM DIGITAL"):
		return "ORF"
	case strings.HasPrefix(mk, "SAMSUNG"):
		return "SRW"
	case strings.HasPrefix(mk, "CANON"):
		return "CR2"
	case strings.HasPrefix(mk, "HASSELBLAD"):
		return "3FR"
	case strings.HasPrefix(mk, "LEAF"):
		return "MOS"
	case strings.HasPrefix(mk, "PHASE ONE"):
		return "IIQ"
	case strings.HasPrefix(mk, "MAMIYA"):
		return "MEF"
	case strings.HasPrefix(mk, "EPSON"):
		return "ERF"
	case strings.Contains(mk, "KODAK"):
		return "DCR"
	case strings.HasPrefix(mk, "PANASONIC"), strings.HasPrefix(mk, "LEICA"):
		return "RW2"
	}
	return "TIFF"
}
