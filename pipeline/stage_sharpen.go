package pipeline

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/rawbatch/rawbatch/pipeline/denoise"
)

// sharpenStage is the capture sharpening (--capture-sharpen,
// docs/denoise.md) of the full linear camera image, after the noise
// reduction: an unsharp mask of σ = denoise.SharpenSigma px on the
// luminance (denoise.CaptureSharpen), restoring what the
// demosaic softened. The per-variant output sharpening after resize
// (the variant's sharpen=, in the output-space stage) is another step and
// stays. Like denoise it runs after the stage cache point.
var sharpenStage = Stage{Name: "capture-sharpen", Scope: PerFile, Kind: Spatial, Version: 1, Cost: captureSharpenCost, Active: Settings.captureSharpenActive, run: stageCaptureSharpen, Band: captureSharpenBand}

// captureSharpenBand is the stage's band form (Stage.Band): the unsharp
// mask row by row (denoise.Sharpener, margin its Lookahead: the mask's
// radius, 3 rows), in parallel over the rows of a band.
func captureSharpenBand(j *job, _ *stream) (bandPrepare, bool) {
	return func(_ context.Context, s *stream) error {
		if a := j.captureSharpenAmount(); a != 0 {
			w, h := s.upright()
			sh := denoise.NewSharpener(w, h, a, denoise.SharpenSigma)
			s.addFilter(sh.Lookahead(), func(_, y1 int, row func(y int) []float32) { sh.Rows(y1, row) })
		}
		return nil
	}, true
}

// Capture sharpening settings (Settings.CaptureSharpen).
const (
	// CaptureSharpenAuto: the amount for the demosaic (captureAmounts;
	// CaptureSharpenHalf for --half-size), times 1 − strength/2 (at
	// least 0) of the noise reduction applied, so a denoised high-ISO
	// file is sharpened less. The default.
	CaptureSharpenAuto = "auto"
	// CaptureSharpenOff: no capture sharpening.
	CaptureSharpenOff = "off"
	// CaptureSharpenHalf is auto's amount for --half-size, whose pixels
	// are 2×2 photosite blocks and need no demosaic.
	CaptureSharpenHalf = 0.3
	// CaptureSharpenMax is the largest --capture-sharpen AMOUNT accepted.
	CaptureSharpenMax = 4
)

// captureAmounts are auto's amounts per demosaic at full size: the plain
// interpolations soften more than the adaptive ones.
var captureAmounts = map[Demosaic]float64{"linear": 1.2, "vng": 1.0, "ppg": 1.0, "ahd": 0.8, "dcb": 0.8, "dht": 0.8, "aahd": 0.8, "rcd": 0.8, DemosaicXTrans: 0.8}

// ParseCaptureSharpen accepts --capture-sharpen: auto, off
// (case-insensitive) or an amount from 0 to CaptureSharpenMax (0 is off;
// the unsharp mask's gain on luminance, 0.8 is auto's for RCD). It
// returns the normal form: "auto", "off" or the number as
// strconv.FormatFloat 'g' writes it.
func ParseCaptureSharpen(s string) (string, error) {
	switch v := strings.ToLower(strings.TrimSpace(s)); v {
	case CaptureSharpenAuto, CaptureSharpenOff:
		return v, nil
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || !(f >= 0 && f <= CaptureSharpenMax) {
		return "", fmt.Errorf("capture sharpening %q: want auto, off or an amount from 0 to %d", s, CaptureSharpenMax)
	}
	if f == 0 {
		return CaptureSharpenOff, nil
	}
	return strconv.FormatFloat(f, 'g', -1, 64), nil
}

// captureSharpen is s.CaptureSharpen in normal form, "" meaning auto (an
// invalid value, caught by Validate, counts as off).
func (s Settings) captureSharpen() string {
	if s.CaptureSharpen == "" {
		return CaptureSharpenAuto
	}
	v, err := ParseCaptureSharpen(s.CaptureSharpen)
	if err != nil {
		return CaptureSharpenOff
	}
	return v
}

func (s Settings) captureSharpenActive() bool { return s.captureSharpen() != CaptureSharpenOff }

// SharpenUsed is the capture sharpening a conversion applied, and why
// (Result.CaptureSharpen, the report's capture_sharpen).
type SharpenUsed struct {
	// Amount of the unsharp mask (0: none), Sigma its Gaussian in pixels.
	Amount float64 `json:"amount"`
	Sigma  float64 `json:"sigma_px,omitempty"`
	// Reason: "auto: ahd 0.80", "auto: ahd 0.80 × 0.50 after denoise
	// strength 1.00", "--capture-sharpen 0.8", "--capture-sharpen off".
	Reason Text `json:"reason"`
}

// captureAmount is the amount the settings ask for after a noise
// reduction of strength dn, and why. used is the demosaic the file
// actually got (Result.Demosaic; "" before it is known: s.Demosaic's):
// auto's amount is that algorithm's in captureAmounts, and the reason
// names it; one without an amount of its own (none at full size: a
// linear DNG) keeps the amount s.Demosaic asks for.
func captureAmount(s Settings, used string, dn float64) (float64, string) {
	switch v := s.captureSharpen(); v {
	case CaptureSharpenOff:
		return 0, "--capture-sharpen off"
	case CaptureSharpenAuto:
		base, what := captureAmounts[s.Demosaic], string(s.Demosaic)
		if a, ok := captureAmounts[Demosaic(used)]; ok {
			base, what = a, used
		} else if used != "" {
			what = used
		}
		if s.HalfSize {
			base, what = CaptureSharpenHalf, "half size"
		}
		if dn <= 0 {
			return base, fmt.Sprintf("auto: %s %.2f", what, base)
		}
		f := max(0, 1-dn/2)
		return base * f, fmt.Sprintf("auto: %s %.2f × %.2f after denoise strength %.2f", what, base, f, dn)
	default:
		a, _ := strconv.ParseFloat(v, 64)
		return a, "--capture-sharpen " + v
	}
}

// captureSharpenCost: denoise.CaptureSharpen's luminance plane (4 bytes
// a pixel).
func captureSharpenCost(m memCtx) StepMemory {
	return StepMemory{Scratch: denoise.SharpenScratchBytes(m.step.W, m.step.H)}
}

func stageCaptureSharpen(_ context.Context, j *job) error {
	if a := j.captureSharpenAmount(); a != 0 {
		denoise.CaptureSharpen(j.camera, j.img.W, j.img.H, a, denoise.SharpenSigma)
		j.giveBack() // its luminance planes, before the quantiser allocates
	}
	return nil
}

// captureSharpenAmount decides the capture sharpening of j and records it
// (j.sharpenUsed): the amount to apply, 0 for none.
func (j *job) captureSharpenAmount() float64 {
	a, why := captureAmount(j.settings, j.demosaicUsed, j.denoiseUsed.Strength)
	j.sharpenUsed = SharpenUsed{Reason: Text(why)}
	if a == 0 || j.colors != 3 {
		if a != 0 {
			j.sharpenUsed.Reason += Text(fmt.Sprintf("; not applied to a %d-channel image", j.colors))
		}
		return 0
	}
	j.sharpenUsed.Amount, j.sharpenUsed.Sigma = a, denoise.SharpenSigma
	return a
}

// sharpenResult is the capture sharpening for Result (nil when the file
// was not decoded).
func (j *job) sharpenResult() *SharpenUsed {
	if !j.decoded && !j.fromCache {
		return nil
	}
	u := j.sharpenUsed
	if u.Reason == "" {
		_, why := captureAmount(j.settings, j.demosaicUsed, 0)
		u.Reason = Text(why)
	}
	return &u
}
