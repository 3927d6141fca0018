package pipeline

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/rawbatch/rawbatch/internal/fault"
	"github.com/rawbatch/rawbatch/pipeline/demosaic"
	"github.com/rawbatch/rawbatch/pipeline/internal/libraw"
	"github.com/rawbatch/rawbatch/pipeline/internal/thp"
)

// demosaicStage is LibRaw's processing of the unpacked data: black level,
// white balance, demosaic, copied into float32 camera RGB (or the stage
// cache's copy); with --demosaic rcd on Bayer data, rawbatch's own
// normalisation and RCD instead: the stage reads LibRaw's unpacked Bayer
// data in place (after the white-level stage's rescale and the raw
// opcodes' gain maps), normalises it as LibRaw's scale_colors would
// (black, white, white-balance multipliers) and runs pipeline/demosaic's
// RCD, without LibRaw's processing and its 4×16-bit image. A half-size
// decode of such a file bins its 2×2 blocks from the same normalised CFA
// (demosaic.Half: halfOwn), LibRaw's half_size picture within its 16-bit
// rounding, so the version stands.
// Version 1: RCD, rawbatch's own, is the default demosaic.
var demosaicStage = Stage{Name: "demosaic", Scope: PerFile, Kind: Spatial, Version: 1, Cost: demosaicCost, run: stageDemosaic, Band: demosaicBand}

// demosaicBand is the demosaic's band form (Stage.Band): RCD in bands of
// upright rows (demosaic.Bands, made by the stream once every step is
// prepared; margin: RCD's own, inside its tiles), for a file RCD takes.
// A stream whose image the stage cache stores runs in two passes
// (stagecache.go: pass 1's stored rows are the entry).
func demosaicBand(j *job, s *stream) (bandPrepare, bool) {
	if !ownDemosaic(j.settings) {
		return nil, false
	}
	c, mul, why, err := j.rcdInput()
	if why != "" || err != nil {
		return nil, false // the whole-image path says why, or fails
	}
	s.cfa = c
	return func(ctx context.Context, s *stream) error {
		s.cfa.Stop = func() bool { return ctx.Err() != nil }
		j.wb.Multipliers = [3]float64{mul[0] / mul[1], 1, mul[2] / mul[1]}
		j.camera, j.colors = nil, 3
		j.img = Image{W: c.W, H: c.H}
		j.demosaicUsed = "rcd"
		if j.cacheStores() && s.two == nil {
			s.two = &twoPass{anchor: -1}
		}
		return nil
	}, true
}

// ahdTile is dcraw/LibRaw's AHD tile size TS; each thread's tile buffer is
// 26·TS² bytes (malloc(26*TS*TS) in ahd_interpolate), of which only the
// part a tile touches becomes resident.
const ahdTile = 512

// scratchPerPixel is the demosaic's full-image working memory in bytes per
// processed pixel, beyond LibRaw's image: DCB keeps two float[3] copies
// (dcb_demosaic: image2, image3), DHT a float[3] copy and a direction map,
// AAHD two ushort[3] and two float[3] planes and a direction map. Measured
// with BenchmarkEstimateCalibration on a 12 MP synthetic DNG: dcb 24.0,
// dht 13.2, aahd 39.3.
var scratchPerPixel = map[string]float64{"dcb": 24, "dht": 13.2, "aahd": 39.3}

// demosaicCost returns LibRaw's buffers while it decodes and the float
// copy it hands on. For the image LibRaw processes (libRawSize: halved for
// a CFA sensor's half-size decode), of px pixels: its 4×16-bit image (8
// bytes per pixel), the
// demosaic's scratch (AHD: 26·min(px, TS²) per thread; DCB, DHT, AAHD:
// scratchPerPixel; none without demosaic), and the W×H×3 float32 copy
// (12 bytes per pixel; a half-size non-CFA image is halved after it).
// Peak: the unpacked raw data (unpackCost) + image + max(scratch, copy);
// after: the copy, the raw data freed with the handle.
func demosaicCost(m memCtx) StepMemory {
	if m.streamed {
		return streamCost(m)
	}
	// --wb auto is LibRaw's grey world, which only its processing
	// computes (errLibRawWB): the file is decoded by LibRaw.
	own := m.fi.CFA && !maybeXTrans(m.fi) && m.s.WhiteBalance.Mode != "auto"
	if ownDemosaic(m.s) && own {
		return rcdCost(m)
	}
	if ownHalf(m.s) && own {
		// demosaic.Half: the half-size float32 image, two rows a thread.
		lw, lh := libRawSize(m.fi, m.s)
		return StepMemory{Scratch: 8 * int64(m.fi.Width) * int64(max(1, m.threads)), Alloc: 12 * int64(lw) * int64(lh), Free: rawDataBytes(m.fi)}
	}
	lw, lh := libRawSize(m.fi, m.s)
	px := int64(lw) * int64(lh)
	img := 8 * px
	var scratch int64
	if m.fi.CFA && !m.s.HalfSize {
		switch string(m.s.Demosaic) {
		case "ahd", "rcd", "": // rcd: LibRaw's AHD for the files RCD does not take
			scratch = 26 * min(px, ahdTile*ahdTile) * int64(max(1, m.threads))
		default:
			scratch = int64(float64(px) * scratchPerPixel[string(m.s.Demosaic)])
		}
	}
	copied := 12 * px
	return StepMemory{Scratch: img + max(scratch, copied) - copied, Alloc: copied, Free: rawDataBytes(m.fi)}
}

func stageDemosaic(ctx context.Context, j *job) error {
	var why string // why rcd did not take the file
	if ownDemosaic(j.settings) {
		var handled bool
		var err error
		handled, why, err = j.demosaicOwn(ctx)
		if err != nil {
			return err
		}
		if handled {
			j.decodedOwn("rcd")
			return nil
		}
	}
	if ownHalf(j.settings) && !halfLibRaw {
		handled, err := j.halfOwn()
		if err != nil {
			return err
		}
		if handled {
			j.decodedOwn(DemosaicNone)
			return nil
		}
	}
	j.demosaicUsed = libRawDemosaic(j.info, j.settings)
	if ownDemosaic(j.settings) && j.demosaicUsed != DemosaicNone {
		// rcd fell back to LibRaw's (AHD, or what LibRaw runs instead).
		// A file without a CFA (a linear or lossy DNG) has nothing to
		// demosaic: nothing is wrong with it, so no warning (the report's
		// demosaic says "none").
		j.demosaicFallback = "--demosaic rcd: " + why + "; " + libRawDemosaicNote(j.demosaicUsed)
		j.warnings = append(j.warnings, j.demosaicFallback)
	}
	// LibRaw's processing allocates its image in C memory, which cannot
	// reuse the Go heap's free pages: the earlier steps' garbage (the
	// preview's decoding) goes back to the system first, so the peak
	// follows the estimate (TestEstimateCalibration, half size).
	j.giveBack()
	stop := context.AfterFunc(ctx, j.h.Cancel)
	defer stop()
	j.params.Threads = j.threads
	if err := j.h.Process(j.params); err != nil {
		if errors.Is(err, libraw.ErrCancelled) && ctx.Err() != nil {
			return ctx.Err()
		}
		return err
	}
	if j.params.WB == libraw.WBCamera && j.h.Warnings()&libraw.WarnBadCameraWB != 0 {
		j.warnings = append(j.warnings, "no usable camera white balance in the file; used daylight")
	}
	if err := j.appliedWB(); err != nil {
		return err
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
	j.decoded = true
	j.decodedW, j.decodedH = w, h
	fault.At(fault.Decoded, j.in)
	return nil
}

// halve box-filters an interleaved image of w×h pixels with nc channels to
// ((w+1)/2)×((h+1)/2), averaging each 2×2 block (the pixels that exist at
// the right and bottom edges), as LibRaw's half-size decode sizes it.
func halve(src []float32, w, h, nc int) ([]float32, int, int) {
	hw, hh := halvedIf(true, w, h)
	dst := thp.Floats(hw * hh * nc)
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

// ownDemosaic reports whether the demosaic stage demosaics j's file itself
// with settings s: --demosaic rcd, not half size (LibRaw's half-size decode
// does not demosaic) and LibRaw's highlight mode 0 (clip). Whether the
// file is Bayer data only its decode tells (bayerCFA).
func ownDemosaic(s Settings) bool {
	return s.Demosaic == "rcd" && !s.HalfSize && s.Highlight == 0
}

// decodedOwn ends a decode made without LibRaw's processing (RCD, or the
// half-size binning: used names it): the LibRaw handle and its raw data
// are no longer needed.
func (j *job) decodedOwn(used string) {
	j.h.Close()
	j.h = nil
	j.decoded = true
	j.demosaicUsed = used
	j.decodedW, j.decodedH = j.img.W, j.img.H
	fault.At(fault.Decoded, j.in)
}

// ownHalf reports whether a half-size decode bins the Bayer blocks itself
// (demosaic.Half, on the CFA normalised as for RCD) instead of LibRaw's
// processing: with highlights clipped there (--highlights clip, the
// default; the highlight stage reconstructs after), as ownDemosaic.
func ownHalf(s Settings) bool { return s.HalfSize && s.Highlight == 0 }

// halfLibRaw, when set (tests), leaves every half-size decode to LibRaw's
// processing: the reference halfOwn is compared with.
var halfLibRaw bool

// halfOwn bins j's unpacked Bayer data into j.camera at half size
// (demosaic.Half): LibRaw's half_size decode without its 16-bit image,
// its copy to the raw image's layout and its colour scaling passes. It
// returns false when the file is not for it (what RCD does not take, an
// odd visible size); LibRaw's processing then decodes it.
func (j *job) halfOwn() (bool, error) {
	c, mul, why, err := j.rcdInput()
	if why != "" || err != nil {
		return false, err
	}
	if c.W%2 != 0 || c.H%2 != 0 {
		return false, nil
	}
	// The anchor's cells from the full-size CFA, as a full-size decode
	// measures them: the same exposure at either size.
	if err := j.reduceAnchorCFA(c, anchorRegion(j, c)); err != nil {
		return false, err
	}
	pix := thp.Floats(3 * (c.W / 2) * (c.H / 2))
	if err := demosaic.Half(c, pix); err != nil {
		return false, fmt.Errorf("half size: %w", err)
	}
	j.wb.Multipliers = [3]float64{mul[0] / mul[1], 1, mul[2] / mul[1]}
	j.camera, j.colors = pix, 3
	j.img = Image{W: c.W / 2, H: c.H / 2}
	return true, nil
}

// errLibRawWB: the white balance is LibRaw's own estimate (grey world),
// which only its processing computes.
var errLibRawWB = errors.New("the white balance is LibRaw's grey world (--wb auto)")

// bayerCFA returns the normalised CFA of v for pipeline/demosaic
// (demosaic.Normalise) and the multipliers applied (rawMultipliers).
// Errors (the file then keeps LibRaw's processing): errLibRawWB for --wb
// auto, or the camera's multipliers unusable to LibRaw (it would estimate
// its own); multipliers that are not positive; a white level at or below
// the black level.
func bayerCFA(v libraw.BayerView, p libraw.Params) (demosaic.CFA, [4]float64, error) {
	return bayerCFAOn(v, p, 0)
}

// bayerCFAOn is bayerCFA reading the data on up to threads goroutines (≤ 0:
// GOMAXPROCS).
func bayerCFAOn(v libraw.BayerView, p libraw.Params, threads int) (demosaic.CFA, [4]float64, error) {
	mul, err := rawMultipliers(v, p)
	if err != nil {
		return demosaic.CFA{}, mul, err
	}
	c, err := demosaic.Normalise(mosaicOf(v), mul, threads)
	return c, mul, err
}

// rawMultipliers are the white-balance multipliers (R, G, B, G2) LibRaw
// 0.21's scale_colors applies with p: user_mul (WBUser), cam_mul
// (WBCamera, when cam_mul[0] and cam_mul[2] are positive), else pre_mul
// (daylight); a zero green becomes 1, a zero G2 the green; divided by the
// smallest (LibRaw's highlight mode 0). errLibRawWB when only LibRaw's
// own estimate would do.
func rawMultipliers(v libraw.BayerView, p libraw.Params) ([4]float64, error) {
	var pre [4]float64
	switch p.WB {
	case libraw.WBUser:
		for i := range 4 {
			pre[i] = float64(p.Multipliers[i])
		}
	case libraw.WBCamera:
		if !(v.CamMul[0] > 1e-5 && v.CamMul[2] > 1e-5) {
			return pre, errLibRawWB
		}
		pre = v.CamMul
	case libraw.WBAuto:
		return pre, errLibRawWB
	default:
		pre = v.PreMul
	}
	if pre[1] == 0 {
		pre[1] = 1
	}
	if pre[3] == 0 {
		pre[3] = pre[1]
	}
	dmin := math.Inf(1)
	for _, m := range pre {
		dmin = min(dmin, m)
	}
	if !(dmin > 1e-5) || math.IsInf(dmin, 0) {
		return pre, fmt.Errorf("white-balance multipliers %v", pre)
	}
	for i := range pre {
		pre[i] /= dmin
	}
	return pre, nil
}

// mosaicOf is LibRaw's view of the unpacked Bayer data as demosaic reads it.
func mosaicOf(v libraw.BayerView) demosaic.Mosaic {
	return demosaic.Mosaic{Pix: v.Pix, Stride: v.Stride, W: v.W, H: v.H, Colour: v.Colour,
		Black: v.Black, CBlack: v.CBlack, Pattern: v.Pattern, PatternRows: v.PatternRows, PatternCols: v.PatternCols,
		Maximum: v.Maximum, AdjustMaximum: v.AdjustMaximum, FixedMaximum: v.FixedMaximum}
}

// rcdInput returns the CFA RCD demosaics for j (the unpacked data in
// place, normalised by bayerCFA, on j.threads goroutines, releasing the
// raw rows it has passed) and the multipliers applied, or why the file is
// not for RCD.
func (j *job) rcdInput() (c demosaic.CFA, mul [4]float64, why string, err error) {
	v, err := j.h.Bayer()
	if errors.Is(err, libraw.ErrNoCFA) {
		return c, mul, err.Error(), nil
	}
	if err != nil {
		return c, mul, "", fmt.Errorf("rcd: %w", err)
	}
	c, mul, err = bayerCFAOn(v, j.params, j.threadsNow())
	if err != nil {
		// LibRaw's processing handles these its own way (its grey world,
		// unit scale for a white level at black).
		return c, mul, err.Error(), nil
	}
	// The file's thread count now (LibRaw's processing would get the
	// admitted one).
	c.Threads = j.threadsNow()
	if j.live.f != nil {
		c.ThreadsNow = j.threadsNow // may grow while the bands run
	}
	// The raw rows RCD has passed go back to the system as it works down
	// the image, so the raw data and the camera image are not both
	// resident in full.
	d, err := j.h.RawDiscarder()
	if err != nil {
		return c, mul, "", fmt.Errorf("rcd: %w", err)
	}
	if !keepRawRows {
		c.Done = func(y int) { d.Discard(y) }
	}
	return c, mul, "", nil
}

// demosaicOwn demosaics j's unpacked Bayer data with RCD into j.camera. It
// returns handled false, with why, when the file is not for it (see
// libraw.Handle.Bayer, bayerCFA); the demosaic stage then runs LibRaw's.
func (j *job) demosaicOwn(ctx context.Context) (handled bool, why string, err error) {
	c, mul, why, err := j.rcdInput()
	if why != "" || err != nil {
		return false, why, err
	}
	c.Stop = func() bool { return ctx.Err() != nil }
	if err := j.reduceAnchorCFA(c, anchorRegion(j, c)); err != nil { // anchor_reduce.go
		return false, "", err
	}
	pix := thp.Floats(c.W * c.H * 3)
	if err := demosaic.RCD(c, pix); errors.Is(err, demosaic.ErrStopped) {
		return false, "", ctx.Err()
	} else if err != nil {
		return false, "", fmt.Errorf("rcd: %w", err)
	}
	j.wb.Multipliers = [3]float64{mul[0] / mul[1], 1, mul[2] / mul[1]}
	j.camera, j.colors = pix, 3
	j.img = Image{W: c.W, H: c.H}
	return true, "", nil
}

// rcdCost is the demosaic step's memory on the RCD path: the W×H×3
// float32 camera image (12 bytes per pixel of the visible area) and each
// goroutine's tile planes (demosaic.TileBytes); no LibRaw image. After: the
// image, the raw data freed with the handle.
func rcdCost(m memCtx) StepMemory {
	lw, lh := libRawSize(m.fi, m.s)
	img := 12 * int64(lw) * int64(lh)
	return StepMemory{Scratch: demosaic.TileBytes * int64(max(1, m.threads)), Alloc: img, Free: rawDataBytes(m.fi)}
}

// maybeXTrans reports whether fi may be a Fujifilm X-Trans file, which
// keeps LibRaw's demosaic (and its cost): the header does not tell the
// CFA pattern, so every Fujifilm mosaic counts.
func maybeXTrans(fi FileInfo) bool {
	return fi.Header != nil && strings.HasPrefix(strings.ToUpper(fi.Header.Make), "FUJI") || strings.HasPrefix(strings.ToUpper(fi.Make), "FUJI")
}

// keepRawRows turns the release of the raw rows off, for
// BenchmarkRCDDecodePeak's comparison only.
var keepRawRows bool

// What a file's demosaic actually was: --demosaic
// names what was asked; rcd falls back to LibRaw's AHD for the files it
// does not take, LibRaw itself takes VNG for four-colour CFAs and its
// Markesteijn X-Trans demosaic for X-Trans, and a half-size decode or a
// file without a CFA is not demosaiced at all.

// Names of demosaics a file can get beyond the --demosaic values
// (Result.Demosaic).
const (
	// DemosaicNone: the image was not demosaiced (half-size decode: each
	// CFA block is one pixel; linear DNG, Foveon, ...: no CFA).
	DemosaicNone = "none"
	// DemosaicXTrans: LibRaw's X-Trans demosaic (Markesteijn,
	// xtrans_interpolate), which it runs for X-Trans files whatever
	// --demosaic asks beyond linear and VNG.
	DemosaicXTrans = "xtrans"
)

// demosaicState is what the demosaic stage (or the stage cache's entry)
// says of the demosaic: used, the algorithm; fallback, the warning given
// when --demosaic rcd fell back to LibRaw's ("" otherwise), repeated on a
// cache hit.
type demosaicState struct {
	demosaicUsed     string
	demosaicFallback string
}

// libRawDemosaic names the demosaic LibRaw 0.21's dcraw_process runs for a
// file of info decoded with settings s (rcd counted as its stand-in, AHD):
// none without a CFA (filters 0) or at half size; linear and VNG as asked;
// VNG for more than three colours; X-Trans's own for filters 9; else the
// algorithm asked (PPG only on a Bayer pattern, AHD otherwise).
func libRawDemosaic(info libraw.Info, s Settings) string {
	if info.Filters == 0 || s.HalfSize {
		return DemosaicNone
	}
	asked := s.Demosaic
	if asked == "rcd" || asked == "" {
		asked = "ahd"
	}
	switch {
	case asked == "linear":
		return "linear"
	case asked == "vng" || info.Colors > 3:
		return "vng"
	case asked == "ppg" && info.Filters > 1000:
		return "ppg"
	case info.Filters == 9:
		return DemosaicXTrans
	case asked == "ppg":
		return "ahd"
	}
	return string(asked)
}

// demosaicResult is the demosaic for Result ("" when the file was not
// decoded, nor read from the stage cache).
func (j *job) demosaicResult() string {
	if !j.decoded && !j.fromCache {
		return ""
	}
	return j.demosaicUsed
}

// libRawDemosaicNote says in a warning what LibRaw did instead of rcd
// with its demosaic d: "demosaiced by LibRaw's AHD", "... X-Trans
// (Markesteijn)", or, for a file without a CFA, that it needed none.
func libRawDemosaicNote(d string) string {
	switch d {
	case DemosaicNone:
		return "processed by LibRaw, which has nothing to demosaic"
	case DemosaicXTrans:
		return "demosaiced by LibRaw's X-Trans (Markesteijn)"
	}
	return "demosaiced by LibRaw's " + strings.ToUpper(d)
}
