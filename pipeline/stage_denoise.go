package pipeline

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/rawbatch/rawbatch/pipeline/denoise"
)

// denoiseStage is the noise reduction (--denoise, docs/denoise.md) of the
// linear camera RGB, after the highlights and any geometric correction and
// before the exposure anchor and the camera matrix: à trous wavelet
// shrinkage of luminance and colour differences (denoise.NoiseMeter and
// denoise.Denoiser, as in the streamed conversion: denoiseWhole), its
// thresholds proportional to the noise measured in the file. It runs after
// the stage cache point (the highlights stage), so its setting is in the
// settings hash of the records, not in the cache key.
// Version 1: the finest level's coefficients are limited to their
// neighbours' range (no single-pixel speckles left on flat areas).
var denoiseStage = Stage{Name: "denoise", Scope: PerFile, Kind: Spatial, Version: 1, Cost: denoiseCost, Active: Settings.denoiseActive, run: stageDenoise,
	Band: denoiseBand}

// Denoise settings (Settings.Denoise).
const (
	// DenoiseAuto: off up to DenoiseAutoMinISO, then strength
	// log2(ISO/400)/4 (ISO 800 0.25, 1600 0.5, 3200 0.75, 6400 1), at
	// most DenoiseMaxAuto. The default.
	DenoiseAuto = "auto"
	// DenoiseOff: no noise reduction.
	DenoiseOff = "off"
	// DenoiseAutoMinISO is the highest ISO at which auto does nothing.
	DenoiseAutoMinISO = 400
	// DenoiseMaxAuto is the largest strength auto picks (ISO 25600 and up).
	DenoiseMaxAuto = 1.5
	// DenoiseMaxStrength is the largest --denoise STRENGTH accepted.
	DenoiseMaxStrength = 4
)

// ParseDenoise accepts --denoise: auto, off (case-insensitive), or a
// strength from 0 to DenoiseMaxStrength (0 is off; 1 is auto's strength at
// ISO 6400: thresholds 1.6·σ on luminance and 3·σ on colour, σ the noise
// measured per wavelet level). It returns the normal form: "auto", "off"
// or the number as strconv.FormatFloat 'g' writes it.
func ParseDenoise(s string) (string, error) {
	switch v := strings.ToLower(strings.TrimSpace(s)); v {
	case DenoiseAuto, DenoiseOff:
		return v, nil
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || !(f >= 0 && f <= DenoiseMaxStrength) {
		return "", fmt.Errorf("denoise %q: want auto, off or a strength from 0 to %d", s, DenoiseMaxStrength)
	}
	if f == 0 {
		return DenoiseOff, nil
	}
	return strconv.FormatFloat(f, 'g', -1, 64), nil
}

// denoise is s.Denoise in normal form, "" meaning auto (an invalid value
// is caught by Validate; here it counts as off).
func (s Settings) denoise() string {
	if s.Denoise == "" {
		return DenoiseAuto
	}
	v, err := ParseDenoise(s.Denoise)
	if err != nil {
		return DenoiseOff
	}
	return v
}

func (s Settings) denoiseActive() bool { return s.denoise() != DenoiseOff }

// validateDetail reports an invalid Denoise or CaptureSharpen.
func (s Settings) validateDetail() error {
	if s.Denoise != "" {
		if _, err := ParseDenoise(s.Denoise); err != nil {
			return err
		}
	}
	if s.CaptureSharpen != "" {
		if _, err := ParseCaptureSharpen(s.CaptureSharpen); err != nil {
			return err
		}
	}
	return nil
}

// DenoiseUsed is the noise reduction a conversion applied, and why
// (Result.Denoise, the report's denoise).
type DenoiseUsed struct {
	// Strength applied (0: none; see ParseDenoise for the scale).
	Strength float64 `json:"strength"`
	// ISO is the file's ISO speed (EXIF, else LibRaw's); 0 when unknown.
	ISO int `json:"iso,omitempty"`
	// Sigma is the noise measured in the image before noise reduction: the
	// standard deviation of the luminance (R+G+B)/3 of camera RGB at mid
	// grey (0.18, 1 = white level), linear (denoise.Noise.LinearAt); 0 when
	// not measured.
	Sigma float64 `json:"sigma,omitempty"`
	// Reason says how the strength was chosen, e.g. "auto: ISO 6400 →
	// strength 1.00; σ 0.0125 at mid grey" or "auto: off at ISO 100
	// (≤ 400)" or "--denoise off".
	Reason Text `json:"reason"`
}

// denoiseState is what the denoise and capture-sharpen stages decided
// (embedded in job).
type denoiseState struct {
	denoiseUsed DenoiseUsed
	sharpenUsed SharpenUsed
}

// fileISO is the file's ISO speed: the header's EXIF ISO (which has
// LibRaw's when the EXIF has none), else LibRaw's; 0 when unknown.
func fileISO(hdr FileInfo, info float64) int {
	if hdr.Header != nil && hdr.Header.EXIF.ISO > 0 {
		return hdr.Header.EXIF.ISO
	}
	if info > 0 && info < math.MaxInt32 {
		return int(info)
	}
	return 0
}

// denoiseStrength is the strength the settings ask for at the given ISO,
// and why.
func denoiseStrength(s Settings, iso int) (float64, string) {
	switch v := s.denoise(); v {
	case DenoiseOff:
		return 0, "--denoise off"
	case DenoiseAuto:
		if iso <= 0 {
			return 0, "auto: off, no ISO in the file"
		}
		if iso <= DenoiseAutoMinISO {
			return 0, fmt.Sprintf("auto: off at ISO %d (≤ %d)", iso, DenoiseAutoMinISO)
		}
		st := min(DenoiseMaxAuto, math.Log2(float64(iso)/DenoiseAutoMinISO)/4)
		return st, fmt.Sprintf("auto: ISO %d → strength %.2f", iso, st)
	default:
		st, _ := strconv.ParseFloat(v, 64)
		return st, "--denoise " + v
	}
}

// denoiseCost: the noise meter's and the denoiser's rings
// (denoise.MeterScratchBytes, denoise.StreamScratchBytes, for rows as
// long as the image's longer side) when the strength for the file's ISO
// is not 0 (a FileInfo without a header: counted), nothing otherwise.
// (A stage cache hit's image is the job's own, read from the entry:
// denoised in place like a decode.) Streamed (m.streamed), its streamed
// form (stream_denoise.go): the denoiser's rings and its lookahead's rows
// of the window, from pass 2 to the encoder (Alloc; pass 1's noise meter
// is the demosaic step's, streamCost).
func denoiseCost(m memCtx) StepMemory {
	iso := fileISO(m.fi, 0)
	if m.fi.Header == nil {
		iso = math.MaxInt32
	}
	if st, _ := denoiseStrength(m.s, iso); st == 0 {
		return StepMemory{}
	}
	if m.streamed {
		return denoiseStreamCost(m)
	}
	long := max(m.step.W, m.step.H)
	return StepMemory{Scratch: denoise.MeterScratchBytes(long) + denoise.StreamScratchBytes(long)}
}

func stageDenoise(ctx context.Context, j *job) error {
	iso := fileISO(FileInfo{Header: j.hdr}, j.info.ISO)
	st, why := denoiseStrength(j.settings, iso)
	j.denoiseUsed = DenoiseUsed{ISO: iso, Reason: Text(why)}
	if st == 0 || j.colors != 3 {
		if st != 0 {
			j.denoiseUsed.Reason += Text(fmt.Sprintf("; not applied to a %d-channel image", j.colors))
		}
		return nil
	}
	n, err := denoiseWhole(ctx, j.camera, j.img.W, j.img.H, st)
	if err != nil {
		return err
	}
	j.denoiseUsed.Strength = st
	j.denoiseUsed.Sigma = n.LinearAt(0.18)
	j.denoiseUsed.Reason += Text(fmt.Sprintf("; σ %.4f at mid grey", j.denoiseUsed.Sigma))
	return nil
}

// denoiseRows is the number of rows denoiseWhole finishes between checks
// for a cancel.
const denoiseRows = 256

// denoiseWhole denoises pix (w×h×3 float32, interleaved, the sensor's
// frame) in place with the given strength, as the streamed conversion
// does its rows: the noise measured over every row (denoise.NoiseMeter),
// then the rows shrunk in bands (denoise.Denoiser), holding the two's
// rings of rows, not full-size planes. It returns
// the noise measured; errors: ctx's when cancelled (pix is then partly
// denoised), or a meter that did not measure every row.
func denoiseWhole(ctx context.Context, pix []float32, w, h int, strength float64) (denoise.Noise, error) {
	row := func(y int) []float32 { return pix[3*y*w : 3*(y+1)*w : 3*(y+1)*w] }
	m := denoise.NewNoiseMeter(w, h, denoise.Turn{})
	for y := 0; y < h; y += denoiseRows {
		if err := ctx.Err(); err != nil {
			return denoise.Noise{}, err
		}
		m.Rows(min(h, y+denoiseRows), row)
	}
	l, ok := m.Levels()
	if !ok {
		return denoise.Noise{}, fmt.Errorf("denoise: %d of %d rows measured", m.Next(), h)
	}
	d := denoise.NewDenoiser(w, h, strength, l, denoise.Turn{})
	for y := 0; y < h; y += denoiseRows {
		if err := ctx.Err(); err != nil {
			return denoise.Noise{}, err
		}
		d.Rows(min(h, y+denoiseRows), row)
	}
	return l.Noise(), nil
}

// denoiseResult is the noise reduction for Result (nil when the file was
// not decoded).
func (j *job) denoiseResult() *DenoiseUsed {
	if !j.decoded && !j.fromCache {
		return nil
	}
	d := j.denoiseUsed
	if d.Reason == "" {
		_, why := denoiseStrength(j.settings, 0)
		d.Reason = Text(why)
	}
	return &d
}

// denoiseIdle: the noise reduction's strength for the file is 0.
func denoiseIdle(j *job) bool {
	st, _ := denoiseStrength(j.settings, fileISO(FileInfo{Header: j.hdr}, j.info.ISO))
	return st == 0
}
