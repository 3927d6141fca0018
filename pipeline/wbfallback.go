package pipeline

import "github.com/rawbatch/rawbatch/pipeline/internal/libraw"

// noCameraWBWarning is the per-file warning of --wb camera on a file that
// records no as-shot white balance.
const noCameraWBWarning = "no camera white balance (AsShotNeutral) in the file; used daylight from its colour matrix"

// hasCameraWB reports whether LibRaw found as-shot multipliers in the file
// (color.cam_mul: R, G, B all positive and finite). For a DNG without
// AsShotNeutral (50728) or AsShotWhiteXY (50729) LibRaw 0.20 leaves
// cam_mul[0] = -1, and with use_camera_wb it then silently computes
// grey-world multipliers (dcraw's scale_colors: use_auto_wb ||
// (use_camera_wb && cam_mul[0] == -1)).
func hasCameraWB(in libraw.Info) bool {
	for _, m := range in.CamMul[:3] {
		if !(m > 0) || m > 1e6 {
			return false
		}
	}
	return true
}

// cameraWBFallback turns --wb camera into daylight (LibRaw's pre_mul, the
// camera's response to D65 from its colour matrix, as --wb daylight) with a
// warning when a DNG has no camera white balance, instead of LibRaw's
// content-dependent grey world. Other formats keep LibRaw's rules: a
// cam_mul[0] of -1 there means the camera itself was on auto white balance
// and stored no multipliers (Canon CRW, ...), which grey world imitates;
// other missing multipliers already fall back to daylight with
// LIBRAW_WARN_BAD_CAMERA_WB (warned in stageDemosaic).
func cameraWBFallback(j *job) {
	if j.params.WB == libraw.WBCamera && j.info.DNGVersion != 0 && !hasCameraWB(j.info) {
		j.params.WB = libraw.WBDaylight
		j.warnings = append(j.warnings, noCameraWBWarning)
	}
}
