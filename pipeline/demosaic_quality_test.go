package pipeline

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/rawbatch/rawbatch/pipeline/colour"
	"github.com/rawbatch/rawbatch/pipeline/synthdng"
)

// qualityBorder is the border in pixels left out of the quality measures
// (LibRaw's demosaics fall back to bilinear in their outer pixels).
const qualityBorder = 8

// truthImage is one ground truth of the demosaic quality table.
type truthImage struct {
	name string
	img  synthdng.RGB
	// edges marks the pixels whose max ΔE2000 the table reports (the
	// Siemens star's spoke edges); nil for none.
	edges []bool
}

// quality is one demosaic's scores on one ground truth.
type quality struct {
	cpsnr, meanDE, maxEdgeDE, meanEdgeDE float64
}

// measureDemosaic re-mosaics truth into a DNG in dir, demosaics it with d
// through the pipeline's steps up to the demosaic stage, and scores the
// result against the truth: CPSNR (dB, over the three channels of every
// pixel at least qualityBorder from the edges, peak 1), mean CIEDE2000
// (camera RGB taken as linear sRGB, which it is for these files: white
// balance 1 and the truth's own values), and the max CIEDE2000 over the
// truth's edge pixels (and their mean).
func measureDemosaic(t testing.TB, dir string, truth truthImage, d Demosaic) quality {
	t.Helper()
	p := filepath.Join(dir, truth.name+".dng")
	if _, err := os.Stat(p); err != nil {
		if err := synthdng.WriteFile(p, synthdng.Mosaic(truth.img)); err != nil {
			t.Fatal(err)
		}
	}
	s := withDemosaic(DefaultSettings(), d)
	got, w, h, j := decodeCamera(t, p, s)
	for _, wn := range j.warnings {
		if strings.Contains(wn, "--demosaic") {
			t.Fatalf("%s %s: %s", truth.name, d, wn)
		}
	}
	tw := truth.img.W
	if w != tw&^1 || h != truth.img.H&^1 {
		t.Fatalf("%s %s: decoded %d×%d of %d×%d", truth.name, d, w, h, tw, truth.img.H)
	}
	var se, de, edgeDE float64
	var n, edges int
	var q quality
	for y := qualityBorder; y < h-qualityBorder; y++ {
		for x := qualityBorder; x < w-qualityBorder; x++ {
			var a, b [3]float64
			for c := range 3 {
				a[c] = float64(got[(y*w+x)*3+c])
				b[c] = float64(truth.img.Pix[(y*tw+x)*3+c])
				se += (a[c] - b[c]) * (a[c] - b[c])
			}
			e := colour.DeltaE2000(colour.SRGB.LinearToLab(a), colour.SRGB.LinearToLab(b))
			de += e
			n++
			if truth.edges != nil && truth.edges[y*tw+x] {
				q.maxEdgeDE = max(q.maxEdgeDE, e)
				edgeDE += e
				edges++
			}
		}
	}
	q.cpsnr = 10 * math.Log10(float64(3*n)/max(se, 1e-30))
	q.meanDE = de / float64(n)
	q.meanEdgeDE = edgeDE / float64(max(edges, 1))
	return q
}

// scaled is img × k.
func scaled(img synthdng.RGB, k float32) synthdng.RGB {
	out := synthdng.RGB{W: img.W, H: img.H, Pix: make([]float32, len(img.Pix))}
	for i, v := range img.Pix {
		out.Pix[i] = v * k
	}
	return out
}

// halfSizeTruth is the half-size decode of a Bayer file (each pixel from
// one 2×2 quad: true RGB, no interpolation), scaled by 0.7 so that it
// stays below any converter's clipping detection.
func halfSizeTruth(t testing.TB, in string) truthImage {
	s := withDemosaic(DefaultSettings(), "ahd")
	s.HalfSize = true
	pix, w, h, _ := decodeCamera(t, in, s)
	return truthImage{name: strings.TrimSuffix(filepath.Base(in), filepath.Ext(in)) + " (half size)", img: scaled(synthdng.RGB{W: w, H: h, Pix: pix}, 0.7)}
}

// smoothTruth is an image of slow colour gradients (no detail a demosaic
// could miss).
func smoothTruth(w, h int) synthdng.RGB {
	img := synthdng.RGB{W: w, H: h, Pix: make([]float32, w*h*3)}
	for y := range h {
		for x := range w {
			fx, fy := float64(x)/float64(w), float64(y)/float64(h)
			img.Pix[(y*w+x)*3+0] = float32(0.1 + 0.5*fx)
			img.Pix[(y*w+x)*3+1] = float32(0.3 + 0.25*math.Sin(2*fy+fx))
			img.Pix[(y*w+x)*3+2] = float32(0.05 + 0.4*fy*fx)
		}
	}
	return img
}

// qualityTruths are the quality table's ground truths.
func qualityTruths(t testing.TB) []truthImage {
	const n = 768
	ts := []truthImage{
		{name: "edges", img: synthdng.Edges(n, n)},
		{name: "zone plate", img: synthdng.ZonePlate(n, n)},
		{name: "Siemens star", img: synthdng.SiemensStar(n, n), edges: synthdng.SiemensStarEdges(n, n, 3)},
	}
	for _, in := range bayerSamples() {
		ts = append(ts, halfSizeTruth(t, in))
	}
	return ts
}

// qualityDemosaics are the algorithms of the quality table.
var qualityDemosaics = []Demosaic{"rcd", "ahd", "dcb", "ppg", "linear"}

// TestRCDQuality: on a zone plate crop RCD scores at least AHD's CPSNR (by 2 dB),
// and well above bilinear; on a smooth image above a floor. A broken RCD
// (a wrong direction, a wrong ratio) fails it.
func TestRCDQuality(t *testing.T) {
	dir := t.TempDir()
	zp := truthImage{name: "zone", img: synthdng.ZonePlate(192, 192)}
	rcd, ahd, lin := measureDemosaic(t, dir, zp, "rcd"), measureDemosaic(t, dir, zp, "ahd"), measureDemosaic(t, dir, zp, "linear")
	t.Logf("zone plate CPSNR: rcd %.2f, ahd %.2f, linear %.2f dB", rcd.cpsnr, ahd.cpsnr, lin.cpsnr)
	// Measured: RCD 4.3 dB above AHD; RCD with its vertical and
	// horizontal estimates swapped 1.2 dB.
	if rcd.cpsnr < ahd.cpsnr+2 {
		t.Errorf("zone plate: RCD %.2f dB, not 2 dB above AHD's %.2f", rcd.cpsnr, ahd.cpsnr)
	}
	if rcd.cpsnr < lin.cpsnr+5 {
		t.Errorf("zone plate: RCD %.2f dB, not 5 dB above bilinear's %.2f", rcd.cpsnr, lin.cpsnr)
	}
	sm := truthImage{name: "smooth", img: smoothTruth(160, 128)}
	q := measureDemosaic(t, dir, sm, "rcd")
	t.Logf("smooth image: RCD CPSNR %.2f dB, mean ΔE2000 %.3f", q.cpsnr, q.meanDE)
	if q.cpsnr < 55 || q.meanDE > 0.2 {
		t.Errorf("smooth image: RCD CPSNR %.2f dB (floor 55), mean ΔE2000 %.3f (at most 0.2)", q.cpsnr, q.meanDE)
	}
}

// BenchmarkDemosaicQuality prints the demosaic quality table of
// docs/pipeline.md: each ground truth (synthetic charts and the Bayer
// samples' half-size renderings) re-mosaiced into an RGGB DNG and
// demosaiced by each algorithm; CPSNR, mean ΔE2000 and, on the Siemens
// star, the max ΔE2000 along its spoke edges (where spokes are at least 3
// px wide). `go test -run '^$' -bench BenchmarkDemosaicQuality -benchtime 1x ./pipeline/`.
func BenchmarkDemosaicQuality(b *testing.B) {
	for b.Loop() {
		dir := b.TempDir()
		var sb strings.Builder
		fmt.Fprintf(&sb, "|ground truth|%s|\n|---|", strings.Join(func() []string {
			var h []string
			for _, d := range qualityDemosaics {
				h = append(h, string(d)+" CPSNR / ΔE")
			}
			return h
		}(), "|"))
		sb.WriteString(strings.Repeat("---|", len(qualityDemosaics)) + "\n")
		var star strings.Builder
		for _, truth := range qualityTruths(b) {
			fmt.Fprintf(&sb, "|%s (%d×%d)|", truth.name, truth.img.W, truth.img.H)
			for _, d := range qualityDemosaics {
				q := measureDemosaic(b, dir, truth, d)
				fmt.Fprintf(&sb, "%.2f / %.2f|", q.cpsnr, q.meanDE)
				if truth.edges != nil {
					fmt.Fprintf(&star, "%s %.1f (mean %.2f); ", d, q.maxEdgeDE, q.meanEdgeDE)
				}
			}
			sb.WriteString("\n")
		}
		fmt.Print(sb.String())
		fmt.Printf("Siemens star, max ΔE2000 along the spoke edges: %s\n", strings.TrimSuffix(star.String(), "; "))
	}
}

// BenchmarkDemosaic24MP times the demosaic stage alone (LibRaw's
// processing with AHD and the copy into float32, against our scaling and
// RCD) on a 24 MP synthetic DNG, with two threads, and prints the median
// of three runs of each. `go test -run '^$' -bench BenchmarkDemosaic24MP -benchtime 1x ./pipeline/`.
func BenchmarkDemosaic24MP(b *testing.B) {
	in := writeSynthetic(b, b.TempDir(), 6000, 4000)
	prev := runtime.GOMAXPROCS(2)
	defer runtime.GOMAXPROCS(prev)
	for b.Loop() {
		// Interleaved rounds: the machine's load reaches both alike.
		walls, cpus := map[Demosaic][]time.Duration{}, map[Demosaic][]time.Duration{}
		for range 3 {
			for _, d := range []Demosaic{"rcd", "ahd"} {
				w, c := timeDemosaic(b, in, withDemosaic(DefaultSettings(), d), 2)
				walls[d], cpus[d] = append(walls[d], w), append(cpus[d], c)
				runtime.GC()
			}
		}
		for _, d := range []Demosaic{"rcd", "ahd"} {
			slicesSort(walls[d])
			slicesSort(cpus[d])
			fmt.Printf("demosaic stage, 24 MP, %s, 2 threads: wall %.2f s, CPU %.2f s (medians of 3)\n", d, walls[d][1].Seconds(), cpus[d][1].Seconds())
		}
	}
}

func slicesSort(ts []time.Duration) {
	for i := range ts {
		for k := i + 1; k < len(ts); k++ {
			if ts[k] < ts[i] {
				ts[i], ts[k] = ts[k], ts[i]
			}
		}
	}
}

// timeDemosaic runs s's per-file steps for in up to the demosaic stage
// with LibRaw on threads threads and returns the demosaic step's wall and
// CPU time (the process's user and system time, all threads).
func timeDemosaic(t testing.TB, in string, s Settings, threads int) (wall, cpu time.Duration) {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	hdr, err := ReadHeader(in)
	if err != nil {
		t.Fatal(err)
	}
	j := &job{in: in, settings: s, hdr: hdr, threads: threads}
	defer j.cleanup()
	for _, st := range PlanStages(InfoFromHeader(hdr), s).Steps {
		t0, c0 := time.Now(), cpuTime()
		if err := st.stage.run(t.Context(), j); err != nil {
			t.Fatalf("%s: %s: %v", in, st.Name, err)
		}
		if st.Name == "demosaic" {
			return time.Since(t0), cpuTime() - c0
		}
	}
	t.Fatalf("%s: no demosaic step", in)
	return 0, 0
}

// BenchmarkRCDDecodePeak prints the peak resident memory of the decode
// (the steps up to the demosaic stage, RCD) of a 24 MP synthetic DNG in
// bytes per pixel, with the raw rows released as RCD passes them
// (released) or not (kept). Run each in its own process, as a worker is
// (a Go heap that has held and freed memory zeroes it again when reused,
// touching every page): `go test -c -o rb.test ./pipeline && ./rb.test
// -test.run '^$' -test.bench 'BenchmarkRCDDecodePeak/kept'` and
// '.../released'.
func BenchmarkRCDDecodePeak(b *testing.B) {
	for _, keep := range []bool{true, false} {
		name := map[bool]string{true: "kept", false: "released"}[keep]
		b.Run(name, func(b *testing.B) {
			in := writeSynthetic(b, b.TempDir(), 6000, 4000)
			for b.Loop() {
				keepRawRows = keep
				defer func() { keepRawRows = false }()
				base := settledRSS()
				pix, w, h, _ := decodeCamera(b, in, DefaultSettings())
				peak := procStatus("VmHWM")
				runtime.KeepAlive(pix)
				fmt.Printf("RCD decode of 24 MP, raw rows %s: peak %.0f MB above the start, %.2f bytes per pixel\n", name, float64(peak-base)/1e6, float64(peak-base)/float64(w*h))
			}
		})
	}
}
