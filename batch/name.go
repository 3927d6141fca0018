package batch

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/rawbatch/rawbatch/pipeline"
)

// NameTemplate is a parsed --name output naming template: literal text
// and fields in braces, expanded per input and variant to the output's path
// without its extension (NameTemplate.Expand). Fields:
//
//	{stem}          the input's base name without its extension (IMG_0001)
//	{ext}           the input's extension without the dot, as written (CR3)
//	{dir}           the input's folder relative to its input root (nothing
//	                at the root)
//	{variant}       the variant's name (main, thumb); then no ".NAME" is added
//	{date:LAYOUT}   the capture time (EXIF DateTimeOriginal, else DateTime,
//	                the camera's wall clock as written, whatever the
//	                machine's time zone) in Go's time layout (2006-01-02,
//	                2006/01, 20060102-150405); {date} is {date:2006-01-02};
//	                zone elements show the photo's OffsetTimeOriginal
//	                (-0700: -0500; MST: -0500 too), +0000 and UTC when it
//	                has none (header.Dates.Capture); "undated" when the
//	                file has no date
//	{camera}        the camera as the raw file names it: Make and Model
//	                by header.CameraName ("Canon EOS 6D", "NIKON D70",
//	                "SONY ILCE-7M3"), "unknown-camera" when it has none
//	{seq}           the input's number, from 0001, in the order of the
//	                inputs' paths relative to their input roots, then of the
//	                roots' absolute paths; given once: a file keeps the
//	                number its record holds (PlanOptions.Recorded), new files
//	                get the next numbers no other existing file holds
//
// "{{" and "}}" are literal braces. A file or folder name of the
// expansion that starts with '.' (hidden; "._NAME" is a macOS AppleDouble
// file) gets '_' for that dot: "{dir}{stem}" at the root is "IMG_1", not
// ".IMG_1"; ".{stem}" is "_IMG_1". A template whose text has a '/' makes
// folders and is relative to OUTDIR ("{date:2006/01}/{stem}",
// "{dir}/{camera}/{stem}"); one without names the file inside the folder
// that mirrors the input's ("{stem}" is the default naming). A template
// that is empty, starts with '/', or has a ".." folder could leave OUTDIR
// and is refused by ParseNameTemplate.
type NameTemplate struct {
	text  string
	parts []namePart
	// rooted: the template makes folders and is relative to OUTDIR.
	rooted bool
	// needsHeader: a field is read from the file's header ({date},
	// {camera}); needsSeq: {seq}; hasVariant: {variant}.
	needsHeader, needsSeq, hasVariant bool
}

type namePart struct {
	lit, field, arg string // field "" for literal text
}

// NameFields are the values a NameTemplate expands for one output.
type NameFields struct {
	// Stem, Ext (no dot) and Dir ("." or "" at the root: {dir} is then
	// empty) of the input's path relative to its input root.
	Stem, Ext, Dir string
	// Variant is the variant's name.
	Variant string
	// Camera is the camera's name (header.CameraName; "" unknown); Date the
	// capture time as the camera wrote it, its wall clock in the photo's
	// offset or UTC (header.EXIF.DateTime; zero: unknown).
	Camera string
	Date   time.Time
	// Seq is the input's number (from 1).
	Seq int
}

// DefaultNameTemplate is the naming of outputs without --name.
const DefaultNameTemplate = "{stem}"

// ParseNameTemplate parses a --name template (see NameTemplate). Errors
// name the template and the reason: an unknown field, an unclosed brace,
// an empty result, or a path that could leave OUTDIR (absolute, "..").
func ParseNameTemplate(text string) (*NameTemplate, error) {
	n := &NameTemplate{text: text}
	bad := func(format string, a ...any) error {
		return fmt.Errorf("name template %q: %s", text, fmt.Sprintf(format, a...))
	}
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			n.parts = append(n.parts, namePart{lit: lit.String()})
			lit.Reset()
		}
	}
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case c == '{' && i+1 < len(text) && text[i+1] == '{', c == '}' && i+1 < len(text) && text[i+1] == '}':
			lit.WriteByte(c)
			i++
		case c == '}':
			return nil, bad("a '}' without its '{' (write }} for a brace)")
		case c == '{':
			end := strings.IndexByte(text[i:], '}')
			if end < 0 {
				return nil, bad("a '{' without its '}'")
			}
			field, arg, hasArg := strings.Cut(text[i+1:i+end], ":")
			switch field {
			case "stem", "ext", "dir", "variant", "camera", "seq":
				if hasArg {
					return nil, bad("{%s} takes no ':'", field)
				}
			case "date":
				if !hasArg {
					arg = "2006-01-02"
				}
				if arg == "" {
					return nil, bad("{date:} needs a Go time layout, such as {date:2006-01-02}")
				}
				if strings.Contains(arg, "/") {
					n.rooted = true
				}
			default:
				return nil, bad("unknown field {%s}; the fields are {stem}, {ext}, {dir}, {variant}, {date:LAYOUT}, {camera}, {seq}", field)
			}
			flush()
			n.parts = append(n.parts, namePart{field: field, arg: arg})
			n.needsHeader = n.needsHeader || field == "date" || field == "camera"
			n.needsSeq = n.needsSeq || field == "seq"
			n.hasVariant = n.hasVariant || field == "variant"
			i += end
		default:
			if c == '/' {
				n.rooted = true
			}
			lit.WriteByte(c)
		}
	}
	flush()
	if strings.HasPrefix(text, "/") {
		return nil, bad("it starts with '/': names are relative to OUTDIR")
	}
	// The literal text and the layouts must not leave OUTDIR whatever the
	// fields expand to (field values never hold '/' or "..", see Expand).
	for _, p := range n.parts {
		if p.field == "" {
			for _, seg := range strings.Split(p.lit, "/") {
				if seg == ".." {
					return nil, bad("a '..' folder would leave OUTDIR")
				}
			}
		}
	}
	if _, err := n.Expand(NameFields{Stem: "x", Ext: "x", Dir: "x", Variant: "x", Camera: "x", Date: time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC), Seq: 1}); err != nil {
		return nil, bad("%v", err)
	}
	return n, nil
}

// String returns the template's text.
func (n *NameTemplate) String() string { return n.text }

// NeedsHeader reports whether the template uses a field read from the
// file's header ({date}, {camera}): names are then known only after the
// headers are read (Plan.ResolveNames).
func (n *NameTemplate) NeedsHeader() bool { return n.needsHeader }

// Rooted reports whether the template makes folders and is relative to
// OUTDIR rather than to the folder that mirrors the input's.
func (n *NameTemplate) Rooted() bool { return n.rooted }

// HasVariant reports whether the template uses {variant}: each variant's
// file is then the expansion plus the variant's extension, with no ".NAME".
func (n *NameTemplate) HasVariant() bool { return n.hasVariant }

// nameValue makes a field's value safe as part of one path segment: no
// '/', no NUL, no control characters, not "." or "..", not empty. Bytes
// that are not UTF-8 are kept as they are (an input named lat\xe9.dng gives
// lat\xe9.jpg, as the default name does), never turned into U+FFFD.
func nameValue(s, empty string) string {
	s = strings.TrimSpace(s)
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == '/' || r == '\\' || r < 0x20 || r == 0x7f {
			b.WriteByte('_')
		} else {
			b.WriteString(s[i : i+n]) // an invalid byte too, as it is
		}
		i += n
	}
	s = b.String()
	switch s {
	case "":
		return empty
	case ".", "..":
		return strings.Repeat("_", len(s))
	}
	return s
}

// Expand returns the template's path for f, relative to OUTDIR (Rooted) or
// to the input's mirrored folder, without the output's extension, '/'
// separated and cleaned. Field values are made safe (nameValue); {dir} is
// the one that may hold folders, and is empty at the input root. A name
// (file or folder) that starts with '.' gets '_' for that dot, so that no
// output is hidden or looks like an AppleDouble "._" file. The error says
// why a result cannot be an output path: empty, or a '..' folder.
func (n *NameTemplate) Expand(f NameFields) (string, error) {
	var b strings.Builder
	for _, p := range n.parts {
		switch p.field {
		case "":
			b.WriteString(p.lit)
		case "stem":
			b.WriteString(nameValue(f.Stem, "_"))
		case "ext":
			b.WriteString(nameValue(f.Ext, "_"))
		case "dir":
			d := filepath.ToSlash(filepath.Clean(f.Dir))
			if d == "." || strings.HasPrefix(d, "/") || d == ".." || strings.HasPrefix(d, "../") {
				d = "" // the root: nothing
			}
			b.WriteString(d)
		case "variant":
			b.WriteString(nameValue(f.Variant, "main"))
		case "camera":
			b.WriteString(nameValue(f.Camera, "unknown-camera"))
		case "date":
			if f.Date.IsZero() {
				b.WriteString("undated")
			} else {
				b.WriteString(f.Date.Format(p.arg))
			}
		case "seq":
			b.WriteString(fmt.Sprintf("%04d", f.Seq))
		}
	}
	out := b.String()
	var segs []string
	for _, seg := range strings.Split(out, "/") {
		switch seg {
		case "", ".":
			continue
		case "..":
			return "", fmt.Errorf("it gives %q, whose '..' folder would leave OUTDIR", out)
		}
		if seg[0] == '.' {
			seg = "_" + seg[1:] // not hidden, not an AppleDouble "._" file
		}
		segs = append(segs, seg)
	}
	if len(segs) == 0 {
		return "", fmt.Errorf("it gives the empty name %q", out)
	}
	return strings.Join(segs, "/"), nil
}

// ResolveNames names the outputs of p by o.Name when it needs header
// fields ({date}, {camera}), which PlanBatchWith could not: it reads the
// header of every task (Plan.Inspect with settings s, threads and jobs),
// except inputs modified less than minAge ago and not settled
// (Runner.Settle), which are left for a later run anyway; then maps the
// outputs again, collisions included, and adds the plan's warnings about
// them. It reports whether it inspected the tasks: then their Info,
// Estimate and Err are filled, and Plan.Inspect need not run again. With
// any other template, or none, it does nothing and returns false. Call it
// after Runner.Settle and before Runner.Triage.
func (p *Plan) ResolveNames(o PlanOptions, outDir string, suffixes []string, s pipeline.Settings, minAge time.Duration, threads, jobs int) bool {
	if o.Name == nil || !o.Name.NeedsHeader() {
		return false
	}
	tmp := &Plan{Tasks: slices.Clone(p.Tasks), Headers: p.Headers, Ctx: p.Ctx}
	for i, t := range tmp.Tasks {
		if recent(t.ModTime, minAge) && !t.Settled {
			tmp.Tasks[i].Done = &FileResult{} // not read: still being written
		}
	}
	tmp.Inspect(s, threads, jobs)
	for i, t := range tmp.Tasks {
		if t.Done == nil {
			p.Tasks[i].Info, p.Tasks[i].Estimate, p.Tasks[i].estThreads, p.Tasks[i].Err = t.Info, t.Estimate, t.estThreads, t.Err
		}
	}
	p.Warnings = append(p.Warnings, p.mapOutputs(o, outDir, suffixes)...)
	inputs := map[[2]uint64]int{}
	for i, t := range p.Tasks {
		if fi, err := os.Stat(t.Input); err == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				inputs[[2]uint64{uint64(st.Dev), st.Ino}] = i
			}
		}
	}
	p.finishOutputs(outDir, inputs)
	return true
}
