package synthdng

import (
	"fmt"
	"image"
	"image/jpeg"
	"math"
	"os"
	"path/filepath"
	"sync"

	"github.com/rawbatch/rawbatch/pipeline/tifftag"
)

// The realistic benchmark set (docs/performance.md, "The realistic set"):
// 24 MP files that cost a converter what a camera's files cost. Each is a
// real picture (Picture, e.g. a real raw file developed by rawbatch)
// upscaled to the raw size, with multi-octave texture so that there is
// detail at every scale, a lensfun-known camera and lens (so lens
// correction runs) whose vignetting is in the data, ISO RealISO with its
// photon and read noise (so noise reduction runs), clipped specular
// highlights, 14-bit levels, and an embedded sRGB JPEG preview (so the
// preview-anchored exposure runs), written as a lossless JPEG DNG or a
// Sony lossless ARW.
const (
	// RealSetVersion names the generator's output: it changes whenever
	// the files it writes for the same arguments change, and keys the
	// cache of generated sets (RealSetDir).
	RealSetVersion = 1
	// RealW, RealH are the size of the benchmark set's files (24 MP, a
	// Sony α7 II's or α7 IV's 3:2 crop).
	RealW, RealH = 6000, 4000
	// RealISO is the files' EXIF ISO: the noise of AddNoise at this ISO
	// is added, and rawbatch's --denoise auto runs above ISO 400.
	RealISO = 1600
	// RealBlack, RealWhite are the 14-bit levels (Sony's).
	RealBlack, RealWhite = 512, 16383
	// RealMake, RealModel, RealLens, RealFocal (mm), RealFNumber name a
	// body and lens that lensfun's database (Debian 12 liblensfun-data,
	// mil-sony.xml) has a profile for: vignetting, distortion and TCA at
	// 28 mm. The model is one whose lossless ARW LibRaw 0.21 decodes.
	RealMake    = "Sony"
	RealModel   = "ILCE-7M4"
	RealLens    = "FE 28-70mm F3.5-5.6 OSS"
	RealFocal   = 28.0
	RealFNumber = 5.6
	// RealPreviewLong is the long side, in pixels, of the embedded JPEG
	// preview (Sony's ARWs carry 1616×1080).
	RealPreviewLong = 1616
	// RealExposure is the raw signal of the picture's linear white,
	// relative to white − black: about 1 EV of headroom, as cameras
	// expose; the preview shows the picture at its own exposure.
	RealExposure = 0.5
)

// RealColorMatrix is the set's XYZ (D65) → camera matrix: LibRaw 0.21's
// for RealModel (its adobe_coeff table, from Adobe's DNG converter), so
// that the ARWs, which carry none, have the colours LibRaw expects; the
// DNGs carry it as ColorMatrix1.
var RealColorMatrix = [3][3]float64{
	{0.7460, -0.2365, -0.0588},
	{-0.5687, 1.3442, 0.2474},
	{-0.0624, 0.1156, 0.6584},
}

// realVignetting is lensfun's pa vignetting of RealLens at RealFocal and
// RealFNumber (k1, k2, k3; r normalised to half the diagonal), put into
// the raw data.
var realVignetting = [3]float64{-0.5125, -0.0137, 0.0056}

// Picture is a linear sRGB (D65) image, 1 = diffuse white: Pix holds
// R, G, B float32 per pixel, row-major, W×H pixels.
type Picture struct {
	W, H int
	Pix  []float32
}

// PictureFromImage linearises an sRGB-encoded image (a converter's JPEG
// or 16-bit TIFF) with the inverse IEC 61966-2-1 transfer function.
func PictureFromImage(img image.Image) Picture {
	b := img.Bounds()
	p := Picture{W: b.Dx(), H: b.Dy(), Pix: make([]float32, 3*b.Dx()*b.Dy())}
	lin := func(v uint32) float32 {
		e := float64(v) / 65535
		if e <= 0.04045 {
			return float32(e / 12.92)
		}
		return float32(math.Pow((e+0.055)/1.055, 2.4))
	}
	i := 0
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			p.Pix[i], p.Pix[i+1], p.Pix[i+2] = lin(r), lin(g), lin(bl)
			i += 3
		}
	}
	return p
}

// RealScene is picture k of the realistic set at w×h CFA pixels: its
// scene (Scene, camera RGB relative to white − black, noise included),
// its preview (Preview) and the files made of it (DNG, ARW).
type RealScene struct {
	W, H, K int
	// cam are the picture's camera-RGB planes (RealColorMatrix), at
	// the picture's size, times RealExposure.
	cam    [3][]float32
	pw, ph int
	// crop: the part of the picture shown, in picture pixels (x0, y0,
	// scale per CFA pixel), mirrored when flip.
	x0, y0, scale float64
	flip          bool
	// fine are the texture's octaves of period 2, 4 and 8 pixels, coarse
	// the sum of the octaves of period 16..512 sampled every 8 pixels:
	// lattices of values in [−1, 1], bilinearly interpolated.
	fine   [3]lattice
	coarse lattice
	seed   uint64
}

// lattice is a grid of values every period pixels, (w+2)×(h+2) of them.
type lattice struct {
	period int
	w      int
	v      []float32
}

// at is the lattice bilinearly interpolated at pixel (x, y).
func (l *lattice) at(x, y int) float32 {
	fx, fy := float32(x)/float32(l.period), float32(y)/float32(l.period)
	ix, iy := int(fx), int(fy)
	tx, ty := fx-float32(ix), fy-float32(iy)
	i := iy*l.w + ix
	a := l.v[i] + tx*(l.v[i+1]-l.v[i])
	b := l.v[i+l.w] + tx*(l.v[i+l.w+1]-l.v[i+l.w])
	return a + ty*(b-a)
}

// newLattice is a lattice of period p over w×h pixels whose values are
// f(i, j) at the lattice points (i·p, j·p).
func newLattice(p, w, h int, f func(i, j int) float32) lattice {
	l := lattice{period: p, w: w/p + 2}
	rows := h/p + 2
	l.v = make([]float32, l.w*rows)
	for j := range rows {
		for i := range l.w {
			l.v[j*l.w+i] = f(i, j)
		}
	}
	return l
}

// uniform is a value in [−1, 1) from the hash of (i, j, octave, seed).
func uniform(i, j, o int, seed uint64) float32 {
	h := splitmix(uint64(j)<<32 ^ uint64(i) ^ uint64(o)<<58 ^ seed*0x9e3779b97f4a7c15)
	return float32(int64(h>>11))/float32(1<<52) - 1
}

// textureAmp is the amplitude of each texture octave (natural images'
// spectra fall about as 1/f, so equal amplitude per octave); the texture
// multiplies the picture by exp(textureAmp·Σ octaves).
const textureAmp = 0.15

// NewRealScene prepares picture k (0, 1, ...) of the set at w×h (even)
// from src: each k shows another crop of src (70–100 % of it, another
// place, every other one mirrored) with other texture and noise.
func NewRealScene(src Picture, k, w, h int) (*RealScene, error) {
	if w <= 0 || h <= 0 || w%2 != 0 || h%2 != 0 {
		return nil, fmt.Errorf("synthdng: real scene size %dx%d must be positive and even", w, h)
	}
	if src.W < 2 || src.H < 2 || len(src.Pix) != 3*src.W*src.H {
		return nil, fmt.Errorf("synthdng: real scene source %dx%d with %d values", src.W, src.H, len(src.Pix))
	}
	s := &RealScene{W: w, H: h, K: k, pw: src.W, ph: src.H, seed: uint64(k)*7919 + 1}
	a := camMatrix()
	for c := range 3 {
		s.cam[c] = make([]float32, src.W*src.H)
	}
	for i := range src.W * src.H {
		for c := range 3 {
			v := a[c][0]*float64(src.Pix[3*i]) + a[c][1]*float64(src.Pix[3*i+1]) + a[c][2]*float64(src.Pix[3*i+2])
			s.cam[c][i] = float32(max(v, 0) * RealExposure)
		}
	}
	// The crop: the largest w:h area of src, times 0.7..1, placed by k.
	fit := min(float64(src.W-1)/float64(w), float64(src.H-1)/float64(h))
	s.scale = fit * (1 - 0.3*frac(float64(k)*0.618034))
	s.x0 = (float64(src.W-1) - s.scale*float64(w)) * frac(float64(k)*0.381966+0.5)
	s.y0 = (float64(src.H-1) - s.scale*float64(h)) * frac(float64(k)*0.754878+0.5)
	s.flip = k%2 == 1
	for o := range 3 {
		p := 2 << o
		s.fine[o] = newLattice(p, w, h, func(i, j int) float32 { return uniform(i, j, o, s.seed) })
	}
	const cp = 8
	var coarse []lattice
	for o := 3; o < 9; o++ {
		p := 2 << o
		coarse = append(coarse, newLattice(p, w, h, func(i, j int) float32 { return uniform(i, j, o, s.seed) }))
	}
	s.coarse = newLattice(cp, w, h, func(i, j int) float32 {
		var sum float32
		for l := range coarse {
			sum += coarse[l].at(min(i*cp, w-1), min(j*cp, h-1))
		}
		return sum
	})
	return s, nil
}

// camMatrix is linear sRGB → camera RGB of RealColorMatrix (CameraRGB).
func camMatrix() [3][3]float64 {
	var a [3][3]float64
	for j := range 3 {
		var e [3]float64
		e[j] = 1
		col := CameraRGB(RealColorMatrix, e)
		for i := range 3 {
			a[i][j] = col[i]
		}
	}
	return a
}

func frac(v float64) float64 { return v - math.Floor(v) }

// texture is the log of the texture's multiplier at (x, y), and whether
// (x, y) is a specular glint: where two octaves peak together, a small
// fraction of the picture in small blobs. With smooth, it leaves out the
// octaves finer than 16 pixels (zero mean): the texture as a pixel of a
// preview, which averages several raw pixels, shows it.
func (s *RealScene) texture(x, y int, smooth bool) (float32, bool) {
	c := s.coarse.at(x, y)
	f2 := s.fine[2].at(x, y)
	glint := f2 > 0.75 && c > 1.2
	if smooth {
		return textureAmp * c, glint
	}
	return textureAmp * (s.fine[0].at(x, y) + s.fine[1].at(x, y) + f2 + c), glint
}

// base is camera channel ch of the picture (bilinear) at CFA pixel (x, y).
func (s *RealScene) base(x, y, ch int) float32 {
	if s.flip {
		x = s.W - 1 - x
	}
	fx, fy := s.x0+float64(x)*s.scale, s.y0+float64(y)*s.scale
	ix, iy := int(fx), int(fy)
	ix, iy = min(ix, s.pw-2), min(iy, s.ph-2)
	tx, ty := float32(fx-float64(ix)), float32(fy-float64(iy))
	p := s.cam[ch]
	i := iy*s.pw + ix
	a := p[i] + tx*(p[i+1]-p[i])
	b := p[i+s.pw] + tx*(p[i+s.pw+1]-p[i+s.pw])
	return a + ty*(b-a)
}

// clean is the noise-free signal of channel ch at (x, y), relative to
// white − black (above 1 where clipped), with the lens's vignetting.
func (s *RealScene) clean(x, y, ch int) float64 {
	dx, dy := (float64(x)-float64(s.W-1)/2)/float64(s.W), (float64(y)-float64(s.H-1)/2)/float64(s.W)
	r2 := (dx*dx + dy*dy) / (0.25 * (1 + float64(s.H*s.H)/float64(s.W*s.W)))
	k := realVignetting
	return s.unshaded(x, y, ch, false) * (1 + r2*(k[0]+r2*(k[1]+r2*k[2])))
}

// unshaded is clean without the vignetting (what a camera's preview
// shows: cameras correct their lenses' shading in their JPEGs); smooth as
// for texture.
func (s *RealScene) unshaded(x, y, ch int, smooth bool) float64 {
	t, glint := s.texture(x, y, smooth)
	if glint {
		return 3 * RealExposure
	}
	return float64(s.base(x, y, ch)) * math.Exp(float64(t))
}

// Scene is the camera signal of site (x, y) of CFA colour ch, relative to
// white − black: the clean signal with the photon and read noise of
// RealISO (NoiseSigma), a deviate from a hash of the site (the sum of four
// uniforms, close enough to normal for a benchmark and cheaper), so every
// call for a site gives the same value. Safe for concurrent use.
func (s *RealScene) Scene(x, y, ch int) float64 {
	v := s.clean(x, y, ch)
	h := splitmix(uint64(y)*uint64(s.W) + uint64(x) + s.seed<<40)
	u := float64(h&0xffff) + float64(h>>16&0xffff) + float64(h>>32&0xffff) + float64(h>>48)
	g := (u/65536 - 2) * 1.7320508 // variance of four U(0,1) is 1/3
	return v + NoiseSigma(RealISO, max(v, 0))*g
}

// Preview is the picture as a camera's embedded JPEG shows it: long side
// long pixels, sRGB-encoded linear sRGB (white balanced, no noise, no
// vignetting, the texture's fine octaves averaged out), the stored
// orientation, sampled at the centres of its pixels.
func (s *RealScene) Preview(long int) *image.RGBA {
	pw, ph := long, max(1, int(math.Round(float64(long)*float64(s.H)/float64(s.W))))
	if s.H > s.W {
		ph, pw = long, max(1, int(math.Round(float64(long)*float64(s.W)/float64(s.H))))
	}
	img := image.NewRGBA(image.Rect(0, 0, pw, ph))
	inv := invert3(camMatrix())
	var wg sync.WaitGroup
	rows := make(chan int)
	for range 4 {
		wg.Go(func() {
			for py := range rows {
				y := min(s.H-1, int((float64(py)+0.5)*float64(s.H)/float64(ph)))
				for px := range pw {
					x := min(s.W-1, int((float64(px)+0.5)*float64(s.W)/float64(pw)))
					var cam [3]float64
					for c := range 3 {
						cam[c] = s.unshaded(x, y, c, true) / RealExposure
					}
					rgb := mulMV(inv, cam)
					o := img.PixOffset(px, py)
					img.Pix[o], img.Pix[o+1], img.Pix[o+2], img.Pix[o+3] = srgb8(rgb[0]), srgb8(rgb[1]), srgb8(rgb[2]), 255
				}
			}
		})
	}
	for py := range ph {
		rows <- py
	}
	close(rows)
	wg.Wait()
	return img
}

// DNG is the lossless JPEG DNG of the scene (DefaultTileSize tiles, the
// JPEG preview of RealPreviewLong pixels in a SubIFD, the camera and lens
// and exposure EXIF, ISO RealISO).
func (s *RealScene) DNG() Spec {
	return Spec{
		Width: s.W, Height: s.H, BlackLevel: RealBlack, WhiteLevel: RealWhite, Orientation: 1,
		ColorMatrix1: RealColorMatrix, AsShotNeutral: NeutralFor(RealColorMatrix),
		Make: RealMake, Model: RealModel, ISO: RealISO, ExposureTime: 1.0 / 250, FNumber: RealFNumber, FocalLength: RealFocal,
		Tags:        []Tag{{Dir: tifftag.DirExif, ID: tifftag.LensModel, ASCII: RealLens}},
		Scene:       s.Scene,
		Compression: 7,
		Preview:     s.Preview(min(RealPreviewLong, max(s.W, s.H))),
	}
}

// ARW is the Sony lossless ARW of the scene (256×256 tiles), with the
// same EXIF and preview as DNG.
func (s *RealScene) ARW() ARWSpec {
	return ARWSpec{Width: s.W, Height: s.H, TileWidth: 256, TileLength: 256, Bits: 14,
		BlackLevel: RealBlack, WhiteLevel: RealWhite, Model: RealModel, Scene: s.Scene,
		ISO: RealISO, ExposureTime: 1.0 / 250, FNumber: RealFNumber, FocalLength: RealFocal, Lens: RealLens,
		AsShotNeutral: NeutralFor(RealColorMatrix),
		Preview:       s.Preview(min(RealPreviewLong, max(s.W, s.H)))}
}

// RealSetDir is the cache directory of generated realistic sets under
// root (say the repository's build/): realset-vRealSetVersion, so a new
// generator never reuses an older one's files.
func RealSetDir(root string) string {
	return filepath.Join(root, fmt.Sprintf("realset-v%d", RealSetVersion))
}

// RealSetFormat is how a file of the realistic set is written.
type RealSetFormat string

const (
	// RealDNG is a lossless JPEG DNG (RealScene.DNG).
	RealDNG RealSetFormat = "dng"
	// RealARW is a Sony lossless ARW (RealScene.ARW).
	RealARW RealSetFormat = "arw"
)

// RealSetPath is the path of file k (0-based) of format f of the w×h set
// in dir: realset-WxH-KK.dng or .arw.
func RealSetPath(dir string, w, h, k int, f RealSetFormat) string {
	return filepath.Join(dir, fmt.Sprintf("realset-%dx%d-%02d.%s", w, h, k, f))
}

// RealSource is the raw file, relative to the repository's root, whose
// development is the realistic set's picture: a real scene (Canon EOS
// D30, 3 MP) with skies, foliage and edges.
const RealSource = "testdata/raw/canond30_CRW.CRW"

// RealSet returns the paths of the w×h realistic set's files in the cache
// RealSetDir(root/build), root the repository's root: file k in format
// formats[k] (RealSetPath), writing those that are missing. The source
// picture is RealSource developed by develop, which must write an
// 8-bit sRGB JPEG of the raw file in to out (pipeline.ConvertFile with
// default settings: the set's pictures are rawbatch's own rendering);
// it is called once, only when a file must be written. Each file is
// written under a temporary name and renamed into place, so a file at
// its path is complete and concurrent runs may share the cache.
func RealSet(root string, w, h int, formats []RealSetFormat, develop func(in, out string) error) ([]string, error) {
	dir := RealSetDir(filepath.Join(root, "build"))
	var paths []string
	var src *Picture
	for k, f := range formats {
		p := RealSetPath(dir, w, h, k, f)
		paths = append(paths, p)
		if _, err := os.Stat(p); err == nil {
			continue
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("synthdng: %w", err)
		}
		if src == nil {
			pic, err := developPicture(filepath.Join(root, RealSource), dir, develop)
			if err != nil {
				return nil, err
			}
			src = &pic
		}
		if err := WriteReal(p, *src, k, w, h, f); err != nil {
			return nil, err
		}
	}
	return paths, nil
}

// developPicture develops raw with develop into a temporary JPEG in dir
// and returns it linearised (PictureFromImage).
func developPicture(raw, dir string, develop func(in, out string) error) (Picture, error) {
	tmp, err := os.MkdirTemp(dir, ".develop-*")
	if err != nil {
		return Picture{}, fmt.Errorf("synthdng: %w", err)
	}
	defer os.RemoveAll(tmp)
	out := filepath.Join(tmp, "picture.jpg")
	if err := develop(raw, out); err != nil {
		return Picture{}, fmt.Errorf("synthdng: developing %s: %w", raw, err)
	}
	f, err := os.Open(out)
	if err != nil {
		return Picture{}, fmt.Errorf("synthdng: %w", err)
	}
	defer f.Close()
	img, err := jpeg.Decode(f)
	if err != nil {
		return Picture{}, fmt.Errorf("synthdng: %s developed to %s: %w", raw, out, err)
	}
	return PictureFromImage(img), nil
}

// WriteReal writes file k of format f of the w×h realistic set from src
// to path, through a temporary file in its directory renamed into place.
func WriteReal(path string, src Picture, k, w, h int, f RealSetFormat) (err error) {
	s, err := NewRealScene(src, k, w, h)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".realset-*")
	if err != nil {
		return fmt.Errorf("synthdng: %w", err)
	}
	tmp.Close()
	defer func() {
		if err != nil {
			os.Remove(tmp.Name())
		}
	}()
	switch f {
	case RealDNG:
		err = WriteFile(tmp.Name(), s.DNG())
	case RealARW:
		err = WriteSonyLosslessARW(tmp.Name(), s.ARW())
	default:
		err = fmt.Errorf("synthdng: unknown realistic set format %q", f)
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err != nil {
		return fmt.Errorf("synthdng: %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("synthdng: %w", err)
	}
	return nil
}
