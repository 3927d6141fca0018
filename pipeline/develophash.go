package pipeline

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/rawbatch/rawbatch/internal/filehash"
	"github.com/rawbatch/rawbatch/pipeline/encode"
	"github.com/rawbatch/rawbatch/pipeline/internal/lensfun"
)

// This file is the develop's identity for the up-to-date records: which
// settings change the pictures, and so make an output stale when they
// change. The runner stores DevelopHash once per run and OutputHash per
// output (the records' settings_hash); the values must not change for the
// same settings, or every record written before would be stale.

// DevelopVersion identifies the develop that writes outputs: the names of
// Stages in order, each with its Version ("open.0 whitebalance.0 ...").
// Adding, removing or reordering a stage, or bumping a stage's Version,
// changes it; DevelopHash includes it, so that outputs written by another
// develop are stale even when the build's version string is the same (a
// developer build is "dev" before and after).
func DevelopVersion() string { return developVersion(Stages) }

// developVersionFor is the DevelopVersion that DevelopHash of s hashes:
// without the stages named only when active (Stage.versionIfActive)
// that are inactive for s, so that adding such a stage (one that does
// nothing unless a file asks for it) keeps every record made without it
// valid.
func developVersionFor(s Settings) string {
	stages := make([]Stage, 0, len(Stages))
	for _, st := range Stages {
		if st.versionIfActive && st.Active != nil && !st.Active(s) {
			continue
		}
		stages = append(stages, st)
	}
	return developVersion(stages)
}

// developVersion is DevelopVersion of the stage list stages.
func developVersion(stages []Stage) string {
	parts := make([]string, len(stages))
	for i, st := range stages {
		parts[i] = st.Name + "." + strconv.Itoa(st.Version)
	}
	return strings.Join(parts, " ")
}

// DevelopHash returns "xxh3:<16 hex>", the hash of DevelopVersion (without
// the stages named only when active that s leaves inactive) and of
// every setting of s shared by all outputs that changes their pictures
// (the variants' own are OutputHash's). Settings with a default hash their
// zero value as the default, except the look's; with --lens-db it reads
// the directory's XML files (an unreadable one hashes as its error, so it
// cannot fail).
func DevelopHash(s Settings) string { return developHash(s, developVersionFor(s)) }

// developHash is DevelopHash with develop as the DevelopVersion. The
// order and spelling of the parts are the records' format: a part added
// for a new setting must hash as nothing (or come after the others) when
// the setting has its default, so that records stay valid.
func developHash(s Settings, develop string) string {
	parts := []string{"settings-v2", develop, string(s.Demosaic),
		s.WhiteBalance.String(), fmt.Sprint(s.Exposure), fmt.Sprint(s.BaselineExposure), string(s.Tone),
		fmt.Sprint(s.Highlight), fmt.Sprint(s.HalfSize),
		fmt.Sprint(s.StripMetadata), s.Artist, s.Copyright}
	parts = append(parts, s.rawsideParts()...)
	// The look: "tone-v2" is the default tone curve's version (the
	// parametric curve applied by RGB tone), then the anchor and the look
	// as given.
	parts = append(parts, "tone-v2", string(s.ExposureAnchor), string(s.Look))
	parts = append(parts, "denoise="+s.denoise(), "capture-sharpen="+s.captureSharpen())
	parts = append(parts, lensHashParts(s)...)
	if tierPossible(s) {
		// The half-size tier: off, the default, hashes as nothing so
		// that records stay valid, and so does auto where it can take
		// no file (tierPossible); else it is another picture for the
		// variants it takes.
		parts = append(parts, "half-size-tier=auto")
	}
	// The file's own edit: nothing when it has none.
	parts = append(parts, s.Edit.hashParts()...)
	return filehash.Strings(parts...)
}

// OutputHash returns "xxh3:<16 hex>", the hash of one variant's output:
// develop (DevelopHash of the run's settings) and the variant's own
// settings (name, format, size, quality, space, sharpen, and the options
// added later only when they differ from their defaults). v is Normal, as
// Settings.OutputVariants gives it, so that specs that write the same file
// hash alike.
func OutputHash(develop string, v Variant) string {
	parts := []string{develop, v.Name, v.Format, fmt.Sprint(v.Size), fmt.Sprint(v.Quality), v.Space, fmt.Sprint(v.Sharpen)}
	return filehash.Strings(append(parts, v.hashParts()...)...)
}

// hdrRenditionVersion is the version of the HDR rendition (hdrToneRow)
// that HDR and Ultra HDR variants are made from: a developer bumps it
// when a change makes it other light for the same settings, so that those
// outputs, and only those, are converted again.
const hdrRenditionVersion = 2

// hashParts are the hash parts of v's options that were added after the
// first records were written: none when they have their default values,
// so that the outputs those records describe stay up to date.
func (v Variant) hashParts() []string {
	v = v.Normal()
	parts := v.sizeHashParts()
	if v.Format == "jpeg" && v.Subsampling != encode.JPEGSubsamplingFor(v.Quality) {
		parts = append(parts, "subsampling="+v.Subsampling)
	}
	if v.Source != SourceRaw {
		parts = append(parts, "source="+v.Source)
	}
	if wholeFrameFormats[v.Format] {
		// Formats newer than every record: all their options, always.
		parts = append(parts, "subsampling="+v.Subsampling, fmt.Sprintf("depth=%d", v.Depth), fmt.Sprintf("speed=%d", v.Speed),
			fmt.Sprintf("effort=%d", v.Effort), fmt.Sprintf("lossless=%t", v.Lossless), "hdr="+v.HDR)
	}
	if v.HDR != "" || v.Format == "uhdr" {
		parts = append(parts, fmt.Sprintf("hdr-rendition=%d", hdrRenditionVersion))
	}
	if v.Format == "uhdr" {
		parts = append(parts, "subsampling="+v.Subsampling, fmt.Sprintf("headroom=%g", v.Headroom),
			fmt.Sprintf("gainmap-scale=%d", v.GainMapScale), fmt.Sprintf("gainmap-quality=%d", v.GainMapQuality))
	}
	if v.Compress == "" {
		return parts
	}
	return append(parts, "compress="+v.Compress, "predictor="+v.Predictor)
}

// sizeHashParts are the hash parts of v's box, percentage and upscale:
// none for a long edge or the full size without upscale (records written
// before these existed stay valid).
func (v Variant) sizeHashParts() []string {
	var parts []string
	if v.Width > 0 || v.Height > 0 {
		parts = append(parts, fmt.Sprintf("box=%dx%d", v.Width, v.Height))
	}
	if v.Percent > 0 {
		parts = append(parts, fmt.Sprintf("percent=%g", v.Percent))
	}
	if v.Upscale {
		parts = append(parts, "upscale")
	}
	return parts
}

// lensHashParts are the lens settings of s: the mode, the forced lens, and
// with --lens-db the directory and the content hash of each of its XML
// files (a changed profile converts the outputs again). Nothing but the
// mode with --lens off.
func lensHashParts(s Settings) []string {
	parts := []string{lensChoice.hashPart(s)}
	if s.lens() == LensOff {
		return parts
	}
	parts = append(parts, "lens-model="+s.LensModel)
	if s.LensDB != "" {
		parts = append(parts, "lens-db="+s.LensDB)
		// Only regular files are hashed: a named pipe would block.
		names, err := lensfun.XMLFiles(s.LensDB)
		if err != nil {
			parts = append(parts, "lens-db-error="+err.Error())
		}
		for _, n := range names {
			h, _, _, err := filehash.File(n, nil)
			if err != nil {
				h = err.Error()
			}
			parts = append(parts, filepath.Base(n)+"="+h)
		}
	}
	return parts
}
