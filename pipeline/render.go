package pipeline

import (
	"fmt"
	"image"
	"os"
	"time"

	"github.com/rawbatch/rawbatch/pipeline/colour"
	"github.com/rawbatch/rawbatch/pipeline/encode"
)

// OutputSpec is one file to write for an input: a variant and its path.
type OutputSpec struct {
	Variant Variant
	Path    string
	// Root, when set, is a directory Path lies under (OUTDIR): the
	// folders between them are walked to one at a time without following
	// a symbolic link (fileperm.OpenBelow), and the output's temporary
	// file is made and renamed into place relative to the folder so
	// opened, so a link put in their place meanwhile sends nothing
	// outside Root. A link in the way fails the file (rawerr.ErrRefused).
	Root string
}

// VariantResult describes one written output.
type VariantResult struct {
	Name, Path string
	// Width and Height of the written image in pixels, after resizing and
	// orientation.
	Width, Height int
	// Source is "preview" for a variant made from the embedded preview
	// (source=preview, or source=auto when it qualified), "raw" for one
	// made from the raw data although it asked for source=auto, with
	// SourceReason saying why the preview did not qualify; both empty
	// for the default source=raw.
	Source       string `json:",omitempty"`
	SourceReason string `json:",omitempty"`
}

// variantJob carries one output through the per-variant stages.
type variantJob struct {
	spec OutputSpec
	// dir is the output's folder, opened once (openOutputDir): its
	// temporary file is made, renamed and removed relative to it.
	dir *os.File
	// source and sourceReason are VariantResult's Source and
	// SourceReason.
	source, sourceReason string
	space                *colour.Space
	camera               []float32        // a resized variant's camera-RGB image, until its camera-matrix step
	img                  Image            // linear: resized, then in the variant's colour space
	owned                bool             // img is the variant's own buffer, not the shared image
	upright              Oriented         // img rotated and mirrored upright
	quant                image.Image      // the quantised image, for encoders that take a whole image
	rows                 encode.RowsRGB16 // the quantiser of a streamed (TIFF16) variant
	rows8                encode.RowsRGB8  // the quantiser of a streamed 8-bit (JPEG) variant
	tmp                  string           // temporary output file, renamed into place on success
	// prepare, when set, makes the rows y0 to y1−1 a streamed variant's
	// quantiser reads ready before they are read (stream.ensure).
	prepare func(y0, y1 int)
	// pass is the fused pass that quantise ends (Step.Pass), passTime the
	// time its streamed rows took so far (moved from encode's timing to
	// the pass's: job.movePassTime).
	pass     int
	passTime time.Duration
	// maxCLL and maxFALL are an HDR variant's content light level in nits
	// (CTA-861.3), measured as it is quantised.
	maxCLL, maxFALL int
	// An Ultra HDR variant's tone (set before quantise), gain map and
	// its metadata (made by quantiseUHDR).
	uhdrTone uhdrTone
	gainMap  *image.Gray
	gainMeta encode.GainMap
}

// image returns the image the current step works on: the variant's own
// (j.cur) or, for a shared step, the shared one.
func (j *job) image() Image {
	if j.cur != nil {
		return j.cur.img
	}
	return j.img
}

// variantSpace returns the colour space of a variant ("" is sRGB).
func variantSpace(v Variant) *colour.Space {
	if s, ok := variantSpaces[v.Space]; ok {
		return s
	}
	return colour.SRGB
}

// renderKey identifies what a variant's linear image depends on beyond the
// shared stages: its colour space, size and sharpening.
func renderKey(v Variant) string {
	switch { // another tone rendition
	case v.HDR != "":
		return fmt.Sprintf("%s/%s/%g/hdr", v.Space, v.sizeKey(), v.Sharpen)
	case v.Format == "uhdr":
		return fmt.Sprintf("%s/%s/%g/uhdr", v.Space, v.sizeKey(), v.Sharpen)
	}
	return fmt.Sprintf("%s/%s/%g", v.Space, v.sizeKey(), v.Sharpen)
}

// laterNeedsShared reports whether a variant after v renders from the
// shared working image: one of another rendition not rendered yet.
func (j *job) laterNeedsShared(v *variantJob, key string) bool {
	after := false
	for _, o := range j.outs {
		if after {
			k := renderKey(o.spec.Variant)
			if _, ok := j.rendered[k]; !ok && k != key {
				return true
			}
		}
		after = after || o == v
	}
	return false
}

// laterNeeds reports whether a variant after v renders the same image.
func (j *job) laterNeeds(v *variantJob, key string) bool {
	after := false
	for _, o := range j.outs {
		if after && renderKey(o.spec.Variant) == key {
			return true
		}
		after = after || o == v
	}
	return false
}

// release drops, once variant v is rendered, the shared working image when
// no later variant renders from it, and shared renditions no later variant
// uses, so memory follows the estimate.
func (j *job) release(v *variantJob) {
	needShared := false
	used := map[string]bool{}
	after := false
	for _, o := range j.outs {
		if after {
			k := renderKey(o.spec.Variant)
			used[k] = true
			if _, ok := j.rendered[k]; !ok {
				needShared = true
			}
		}
		after = after || o == v
	}
	if !needShared {
		j.img = Image{W: j.img.W, H: j.img.H}
	}
	for k := range j.rendered {
		if !used[k] {
			delete(j.rendered, k)
		}
	}
}
