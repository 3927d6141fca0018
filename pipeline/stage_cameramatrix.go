package pipeline

import (
	"context"
	"strings"

	"github.com/rawbatch/rawbatch/pipeline/colour"
	"github.com/rawbatch/rawbatch/pipeline/internal/libraw"
	"github.com/rawbatch/rawbatch/pipeline/internal/par"
	"github.com/rawbatch/rawbatch/pipeline/internal/thp"
)

// cameraMatrixStage takes camera RGB to the linear working space, in
// place (a new buffer for a non-RGB camera image).
var cameraMatrixStage = Stage{Name: "camera-matrix", Scope: PerFile, Kind: Pointwise, Linear: true, Cost: noBuffers, run: stageCameraMatrix, Row: cameraMatrixRow}

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

// stageCameraMatrix converts the shared camera image, or a resized
// variant's own (j.cur.camera), to the working space.
func stageCameraMatrix(_ context.Context, j *job) error {
	if w := noMatrixWarning(j.info); w != "" && !j.matrixWarned {
		j.warnings = append(j.warnings, w)
		j.matrixWarned = true
	}
	if v := j.cur; v != nil {
		v.img = j.toWorking(v.camera, j.colors, v.img.W, v.img.H, true)
		v.camera = nil
		return nil
	}
	j.img = j.toWorking(j.camera, j.colors, j.img.W, j.img.H, j.colors == 3)
	j.camera = nil
	j.releaseCached()
	return nil
}

// cameraMatrixRow is the stage's fused form (Stage.Row): the image of the
// step (the shared camera image, or the resized variant's) becomes the
// working-space image the pass works on, and the kernel applies
// CameraToWorking's matrix. It fuses for three-channel camera images only
// (a monochrome or four-channel image changes its layout: run converts
// it). A cache hit's image is the job's own buffer (the stage cache reads
// its entry into it), so it is worked on like a decoded one.
func cameraMatrixRow(j *job, p *fusePass) (rowKernel, bool) {
	if j.colors != 3 {
		return nil, false
	}
	if w := noMatrixWarning(j.info); w != "" && !j.matrixWarned {
		j.warnings = append(j.warnings, w)
		j.matrixWarned = true
	}
	if v := j.cur; v != nil {
		v.img = Image{W: v.img.W, H: v.img.H, Pix: v.camera[:v.img.W*v.img.H*3]}
		v.camera = nil
	} else {
		j.img = Image{W: j.img.W, H: j.img.H, Pix: j.camera}
		if j.camera != nil { // nil: streamed (stream.go)
			j.img.Pix = j.camera[:j.img.W*j.img.H*3]
		}
		j.camera = nil
		j.releaseCached()
	}
	m := j.lookCameraToWorking()
	return matrixKernel(func(i, k int) float64 { return m[i][k] }), true
}

// matrixKernel returns the kernel that multiplies each pixel (r, g, b) by
// the 3×3 matrix whose element (i, k) is at(i, k), in float32: output
// channel i = Σ_k at(i, k)·input channel k.
func matrixKernel(at func(i, k int) float64) rowKernel {
	var mf [3][3]float32
	for i := range 3 {
		for k := range 3 {
			mf[i][k] = float32(at(i, k))
		}
	}
	return func(px []float32) { colour.MulRows(&mf, px) }
}

// toWorking converts a w×h camera-RGB image of nc channels to the linear
// working space with CameraToWorking's matrix, in place when allowed (three
// channels, a buffer of our own; each pixel is read before it is written).
func (j *job) toWorking(src []float32, nc, w, h int, inPlace bool) Image {
	m := j.lookCameraToWorking()
	var mf [3][4]float32
	for i := range 3 {
		for k := range 4 {
			mf[i][k] = float32(m[i][k])
		}
	}
	n := w * h
	dst := src
	if !inPlace || nc != 3 {
		dst = thp.Floats(n * 3)
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

// lookCameraToWorking is CameraToWorking with the camera look's gains
// and colour matrix (CameraLook.Into) when --look camera fitted them.
func (j *job) lookCameraToWorking() [3][4]float64 {
	m := CameraToWorking(j.info.RGBCam)
	if j.cameraLook == nil {
		return m
	}
	return j.cameraLook.Into(m, WorkingSpace)
}

// noMatrixWarning returns the per-file warning for a camera LibRaw has no
// colour matrix for (libraw.Info.HasColourMatrix), "" when it has one:
// the conversion then treats camera RGB as sRGB (identity matrix).
func noMatrixWarning(in libraw.Info) string {
	if in.HasColourMatrix() {
		return ""
	}
	cam := strings.TrimSpace(in.Make + " " + in.Model)
	if cam == "" {
		cam = "this camera"
	}
	return "LibRaw " + libraw.ShortVersion() + " has no colour matrix for " + cam + ": used an identity matrix, colours will be wrong"
}
