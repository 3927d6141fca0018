package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/rawbatch/rawbatch/batch"
	"github.com/rawbatch/rawbatch/budget"
	"github.com/rawbatch/rawbatch/pipeline"
	"github.com/rawbatch/rawbatch/pipeline/header"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// inspectRecord is one file of `rawbatch inspect --json`.
type inspectRecord struct {
	// Path is the file's path for display; PathB64, set only when it is
	// not valid UTF-8, its exact bytes in base64 (as in convert's report).
	Path      string `json:"path"`
	PathB64   string `json:"path_b64,omitempty"`
	Format    string `json:"format"`
	Variant   string `json:"variant,omitempty"`
	Make      string `json:"make"`
	Model     string `json:"model"`
	RawWidth  int    `json:"raw_width"`
	RawHeight int    `json:"raw_height"`
	// Width and Height are the size convert writes with the default
	// settings (--crop camera: the camera's picture area, after rotation;
	// pipeline.DecodedSize); UncroppedWidth and UncroppedHeight LibRaw's
	// whole visible area, after rotation: the size with --crop sensor.
	Width           int     `json:"width"`
	Height          int     `json:"height"`
	UncroppedWidth  int     `json:"uncropped_width"`
	UncroppedHeight int     `json:"uncropped_height"`
	Orientation     int     `json:"orientation"`
	BitsPerSample   int     `json:"bits_per_sample,omitempty"`
	SamplesPerPixel int     `json:"samples_per_pixel,omitempty"`
	Compression     int     `json:"compression,omitempty"`
	Lens            string  `json:"lens,omitempty"`
	DateTime        string  `json:"datetime,omitempty"`
	ExposureTime    float64 `json:"exposure_time,omitempty"`
	FNumber         float64 `json:"f_number,omitempty"`
	ISO             int     `json:"iso,omitempty"`
	FocalLength     float64 `json:"focal_length,omitempty"`
	EstimatedBytes  int64   `json:"estimated_bytes"`
	// ColourMatrix: whether LibRaw has a colour matrix for the camera;
	// absent when LibRaw did not open the file.
	ColourMatrix *bool `json:"colour_matrix,omitempty"`
	// Previews is the number of embedded previews LibRaw lists (absent
	// when LibRaw did not open the file); PreviewWidth × PreviewHeight the
	// largest one's size as the file's tags give it (0: not given),
	// PreviewFormat "JPEG" or "bitmap".
	Previews      *int   `json:"previews,omitempty"`
	PreviewWidth  int    `json:"preview_width,omitempty"`
	PreviewHeight int    `json:"preview_height,omitempty"`
	PreviewFormat string `json:"preview_format,omitempty"`
	Error         string `json:"error,omitempty"`
}

// InspectOptions are the options of `rawbatch inspect`. It has no
// settings of the config file or the environment: it reads headers with
// convert's default settings.
type InspectOptions struct {
	GlobalOptions
	// JSON prints a JSON array of inspectRecord (--json).
	JSON bool
}

// AddFlags adds inspect's flags to f.
func (o *InspectOptions) AddFlags(f *pflag.FlagSet) {
	f.BoolVar(&o.JSON, "json", false, "print a JSON array")
}

// newInspectCmd is `rawbatch inspect`: its options are InspectOptions, its
// run runInspect.
func newInspectCmd() *cobra.Command {
	var opts InspectOptions
	cmd := &cobra.Command{
		Use:   "inspect [--json] FILE|DIR...",
		Short: "Print RAW header fields and the memory estimate, without decoding",
		Long: `Print what rawbatch reads from each file's header without decoding pixels:
format, camera, raw and output size (after the default --crop camera and
rotation; with LibRaw's whole visible area, --crop sensor's, when that
differs), orientation,
sample layout, compression, capture EXIF, and the estimated peak memory of
converting it with the default settings. A directory is walked as convert
walks it: recursively, in lexical order, taking the files with a RAW
extension.

The camera is Make and Model as the file has them, the make not repeated
when the model starts with it ("Canon EOS 6D", "NIKON D70"). File names are
shown escaped as convert's lines show them (control characters as \n or
\x1b, bytes that are not UTF-8 as \xNN). With --json, print a JSON array of
objects with the fields path (and path_b64, its exact bytes in base64, when
it is not valid UTF-8), format, make, model (as the file has them: "NIKON
CORPORATION", "NIKON D70"), raw_width, raw_height, width, height (the size
convert writes by default), uncropped_width, uncropped_height (with --crop
sensor), orientation,
estimated_bytes, and more; a file that cannot be read has an "error".

Exit status: 0 every file read, 3 some could not be, 1 bad usage.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.GlobalOptions = globalOptions(cmd)
			return runInspect(cmd.Context(), opts, args)
		},
	}
	opts.AddFlags(cmd.Flags())
	return cmd
}

// runInspect prints the header fields and memory estimate of each file
// of args (directories walked as convert walks them); a file that cannot
// be read is a failed outcome (exit status 3).
func runInspect(_ context.Context, opts InspectOptions, args []string) error {
	var recs []inspectRecord
	failed := 0
	s := pipeline.DefaultSettings()
	const threads = 1 // the estimate at one thread, as the dry run's
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding the rawbatch executable for its header helper: %w", err)
	}
	// LibRaw's header reads run in a helper process that can be killed.
	hr := &batch.HeaderReader{Exe: exe}
	defer hr.Close()
	for _, p := range inspectPaths(args) {
		r := p.rec
		if r.Error == "" {
			r = inspectFile(hr, p.rec.Path, s, threads)
		}
		if r.Error != "" {
			failed++
		}
		recs = append(recs, r)
	}
	out := opts.Stdout
	if opts.JSON {
		for i := range recs {
			// Bytes that are not UTF-8 shown \xNN, as convert's
			// report does (JSON would make them U+FFFD).
			recs[i].Path, recs[i].PathB64 = batch.ReportPath(recs[i].Path)
			recs[i].Error = displayText(recs[i].Error)
		}
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(recs); err != nil {
			return err
		}
	} else {
		printInspect(out, recs)
	}
	return &batchOutcome{converted: len(recs) - failed, failed: failed}
}

func inspectFile(hr *batch.HeaderReader, path string, s pipeline.Settings, threads int) inspectRecord {
	r := inspectRecord{Path: path}
	h, err := hr.ReadHeader(path)
	if h != nil {
		// Make and Model as the raw has them (EXIF), not LibRaw's
		// normalised names ("Nikon D70" for NIKON CORPORATION / NIKON D70);
		// LibRaw's for a file that names no camera.
		r.Format, r.Variant, r.Make, r.Model = h.Format, h.Variant, h.EXIF.Make, h.EXIF.Model
		if r.Make == "" && r.Model == "" {
			r.Make, r.Model = h.Make, h.Model
		}
		r.RawWidth, r.RawHeight, r.UncroppedWidth, r.UncroppedHeight = h.RawWidth, h.RawHeight, h.Width, h.Height
		// The size convert writes by default: the camera's picture
		// area, as its plan computes it from this header.
		r.Width, r.Height = pipeline.DecodedSize(pipeline.InfoFromHeader(h), s)
		r.Orientation, r.BitsPerSample, r.SamplesPerPixel, r.Compression = h.Orientation, h.BitsPerSample, h.SamplesPerPixel, h.Compression
		e := h.EXIF
		r.Lens, r.ExposureTime, r.FNumber, r.ISO, r.FocalLength = e.Lens, e.ExposureTime, e.FNumber, e.ISO, e.FocalLength
		if !e.DateTime.IsZero() {
			r.DateTime = e.DateTime.Format(time.DateTime)
		}
		if h.SizeFromLibRaw {
			known, n := h.ColourMatrix, h.Previews
			r.ColourMatrix, r.Previews = &known, &n
			if n > 0 {
				r.PreviewWidth, r.PreviewHeight, r.PreviewFormat = h.PreviewWidth, h.PreviewHeight, "bitmap"
				if h.PreviewJPEG {
					r.PreviewFormat = "JPEG"
				}
			}
		}
	}
	if err != nil {
		r.Error = err.Error()
		return r
	}
	// What the scheduler reserves: the conversion and its worker process.
	r.EstimatedBytes = batch.WorkerBytes(pipeline.EstimateMemory(pipeline.InfoFromHeader(h), s, threads))
	return r
}

func printInspect(w io.Writer, recs []inspectRecord) {
	for i, r := range recs {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "%s\n", clean(r.Path))
		if r.Error != "" {
			fmt.Fprintf(w, "  error:        %s\n", clean(r.Error))
		}
		if r.Format == "" {
			continue
		}
		format := r.Format
		if r.Variant != "" {
			format += " (" + r.Variant + ")"
		}
		fmt.Fprintf(w, "  format:       %s\n", format)
		fmt.Fprintf(w, "  camera:       %s\n", clean(header.CameraName(r.Make, r.Model)))
		fmt.Fprintf(w, "  raw size:     %d x %d\n", r.RawWidth, r.RawHeight)
		if r.Width != r.UncroppedWidth || r.Height != r.UncroppedHeight {
			fmt.Fprintf(w, "  output size:  %d x %d (orientation %d; --crop camera, the default; %d x %d with --crop sensor)\n", r.Width, r.Height, r.Orientation, r.UncroppedWidth, r.UncroppedHeight)
		} else {
			fmt.Fprintf(w, "  output size:  %d x %d (orientation %d)\n", r.Width, r.Height, r.Orientation)
		}
		if r.SamplesPerPixel > 0 || r.BitsPerSample > 0 { // not known for every format (CRW, ...)
			fmt.Fprintf(w, "  samples:      %s, compression %d\n", samplesText(r.SamplesPerPixel, r.BitsPerSample), r.Compression)
		}
		if r.ColourMatrix != nil {
			fmt.Fprintf(w, "  colour:       %s\n", colourMatrixLine(*r.ColourMatrix))
		}
		if r.Previews != nil {
			fmt.Fprintf(w, "  preview:      %s\n", previewLine(*r.Previews, r.PreviewWidth, r.PreviewHeight, r.PreviewFormat))
		}
		if r.Lens != "" {
			fmt.Fprintf(w, "  lens:         %s\n", clean(r.Lens))
		}
		if r.DateTime != "" {
			fmt.Fprintf(w, "  taken:        %s\n", r.DateTime)
		}
		if r.ExposureTime > 0 || r.ISO > 0 {
			fmt.Fprintf(w, "  exposure:     %s f/%.1f ISO %d %.0f mm\n", shutter(r.ExposureTime), r.FNumber, r.ISO, r.FocalLength)
		}
		if r.EstimatedBytes > 0 {
			fmt.Fprintf(w, "  memory:       %s estimated peak (default settings, worker process included)\n", budget.FormatSize(r.EstimatedBytes))
		}
	}
}

// shutter writes an exposure time in seconds as photographers do: 1/250s,
// 0.8s, 5s (long exposures to a tenth of a second, trailing zeros dropped).
func shutter(s float64) string {
	if s > 0 && s < 0.5 {
		return fmt.Sprintf("1/%.0fs", 1/s)
	}
	return strconv.FormatFloat(math.Round(s*10)/10, 'f', -1, 64) + "s"
}

// inspectPath is a file for inspect to read, or (rec.Error set) a path it
// could not get a file from.
type inspectPath struct{ rec inspectRecord }

// noOutDir is the output directory given to batch.PlanBatch when
// inspect walks a directory: inspect writes nothing, and a path that does
// not exist keeps the walk from skipping any folder as convert's OUTDIR.
var noOutDir = filepath.Join(os.TempDir(), ".rawbatch-inspect-writes-nothing", "none")

// inspectPaths expands args as convert does: a directory is walked
// (recursively, lexical order, RAW extensions only, the same file once);
// a file is taken as given. A directory without RAW files and a directory
// that cannot be read give an error record each.
func inspectPaths(args []string) []inspectPath {
	var out []inspectPath
	for _, a := range args {
		if fi, err := os.Stat(a); err != nil || !fi.IsDir() {
			out = append(out, inspectPath{inspectRecord{Path: a}})
			continue
		}
		plan, err := batch.PlanBatch([]string{a}, noOutDir, ".jpg")
		if err != nil {
			out = append(out, inspectPath{inspectRecord{Path: a, Error: err.Error()}})
			continue
		}
		for _, p := range plan.Problems {
			out = append(out, inspectPath{inspectRecord{Path: p.Input, Error: p.Err.Error()}})
		}
		for _, t := range plan.Tasks {
			out = append(out, inspectPath{inspectRecord{Path: t.Input}})
		}
		if len(plan.Tasks)+len(plan.Problems) == 0 {
			out = append(out, inspectPath{inspectRecord{Path: a, Error: a + ": a directory with no RAW files in it"}})
		}
	}
	return out
}

// colourMatrixLine is inspect's "colour:" line: whether LibRaw has a
// colour matrix for the camera.
func colourMatrixLine(known bool) string {
	if known {
		return "camera colour matrix known to LibRaw"
	}
	return "no colour matrix for this camera in LibRaw: converted colours will be wrong (identity matrix)"
}

// previewLine is inspect's "preview:" line: the largest embedded preview
// of n, its format and size as the file's tags give it.
func previewLine(n, w, h int, format string) string {
	if n == 0 {
		return "none (source=preview fails, source=auto develops the raw)"
	}
	size := "size not in the file's tags"
	if w > 0 && h > 0 {
		size = fmt.Sprintf("%d x %d", w, h)
	}
	if n > 1 {
		return fmt.Sprintf("%s %s (the largest of %d)", format, size, n)
	}
	return format + " " + size
}

// samplesText is the raw image's samples a pixel and bits a sample, as
// far as the header gives them (a 0 is one it does not).
func samplesText(samples, bits int) string {
	switch {
	case bits == 0:
		return fmt.Sprintf("%d a pixel (bits a sample not in the header)", samples)
	case samples == 0:
		return fmt.Sprintf("%d bits a sample", bits)
	}
	return fmt.Sprintf("%d x %d bits", samples, bits)
}
