// Package look holds the algorithms of rawbatch's default rendering look
// as pure functions, for the develop stages to call: the
// embedded preview's decoding and usability (preview.go), reduction of
// images to a grid of cells (grid.go), the preview-anchored exposure
// (exposure.go), white-balance gains fitted to the preview (wb.go), the
// default tone curve, ProfileToneCurve tables and the hue-preserving "RGB
// tone" application (tone.go; on rows of pixels through a table,
// tonerows.go), gamut compression toward luminance (gamut.go; the output
// space's rule on rows, gamutrows.go), the per-file camera look fit
// (fit.go; its matrix and saturation applied, cameralook.go) and the
// ΔE2000 score against the preview (score.go). docs/look.md explains each algorithm,
// its thresholds and how a stage calls it.
//
// Images are linear light (no transfer function), float32, interleaved
// R, G, B: W×H×3 values, rows top to bottom. Scene-linear means before any
// tone curve, with 1 the raw's white (clip) level after white balance;
// display-linear means after the tone curve, the linear light a display
// shows, 1 = display white. Exposure is in EV (stops, log2 of a linear
// factor).
package look
