// Package colour holds the colorimetry used by the RAW pipeline: 3×3 matrix
// algebra, linear RGB working/output spaces defined by their primaries
// (sRGB, Display P3, Adobe RGB (1998), ProPhoto/ROMM RGB, ITU-R BT.2020),
// Bradford chromatic adaptation, the spaces' transfer functions, fast
// float32→uint8/uint16 sRGB quantisers, CIE L*a*b* and the CIEDE2000 colour
// difference, plus the embedded CC0 ICC profiles in icc/.
//
// Conventions used throughout:
//
//   - RGB triplets are [3]float64 in the order R, G, B. "Linear" values are
//     scene/display-linear, nominal range [0, 1] (1 = the space's reference
//     white); values outside are allowed and are not clipped.
//   - CIE XYZ triplets are [3]float64 in the order X, Y, Z and are relative
//     colorimetry scaled so that Y of the reference white is 1 (not 100).
//   - Chromaticities are CIE 1931 (x, y) pairs.
//   - Matrices act on column vectors: out = M · in (see Mat3.Apply).
package colour
