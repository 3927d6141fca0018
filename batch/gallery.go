package batch

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"html"
	_ "image/png" // outputs the gallery makes thumbnails of
	"io"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/rawbatch/rawbatch/internal/atomicfile"
	"github.com/rawbatch/rawbatch/internal/bytetext"
	"github.com/rawbatch/rawbatch/internal/fileperm"
	"github.com/rawbatch/rawbatch/pipeline"
	"github.com/rawbatch/rawbatch/pipeline/header"
	"github.com/rawbatch/rawbatch/state"
)

// GalleryDir is the folder under OUTDIR that holds the gallery's
// thumbnails, and GalleryPage the page (OUTDIR/index.html).
const (
	GalleryDir  = ".gallery"
	GalleryPage = "index.html"
	// thumbLongEdge is the thumbnails' long edge in pixels.
	thumbLongEdge = 512
	// maxThumbSource is the most pixels of an output decoded for its
	// thumbnail (in this process, outside the memory budget: 8 bytes a
	// pixel at most for a 16-bit TIFF, so 512 MiB).
	maxThumbSource = 64 << 20
	// maxThumbFile is the largest output file read for a thumbnail, in
	// bytes (a 64-megapixel 16-bit TIFF with Deflate fits).
	maxThumbFile = 512 << 20
	// thumbVersion names how thumbnails are made (pipeline.Thumbnail),
	// part of their file names: thumbnails made otherwise are made again.
	thumbVersion = "2"
)

// galleryMark is in every page WriteGallery writes: an index.html
// without it is the user's, and is never overwritten.
const galleryMark = `<meta name="generator" content="rawbatch gallery">`

// lensModelTag is EXIF LensModel (42036, Exif 2.32 §4.6.5), read from
// the input's header for the gallery.
const lensModelTag = 42036

// galleryEntry is one input of the gallery: converted (Thumb, Outputs)
// or failed (Reason).
type galleryEntry struct {
	Input                  string // the absolute input, the key
	Shown                  string // the input as given
	Outputs                []string
	Thumb                  string // relative to OUTDIR, slash-separated; "" when none could be made
	Camera, Lens, Captured string
	Rating, Label          string
	Reason                 string // the failure; "" when converted
	sortKey                string
}

// WriteGallery writes OUTDIR/index.html (atomically) listing every file
// recorded in od (its records and failure records, not only this run's)
// and the failures of results: for each converted input a thumbnail (a
// JPEG of thumbLongEdge pixels on the long edge, made from its smallest
// output that Go can decode (JPEG, PNG, TIFF, WebP; at most
// maxThumbSource pixels) and kept in OUTDIR/.gallery, named by the
// output's content hash so an unchanged output is not read again), its
// outputs, camera, lens, capture time, rating and label (the input's
// header, pipeline/header.ReadMeta); for each failed one its reason. The
// page is static HTML: no script, no network; sorted by capture time,
// then name. Names are shown escaped (bytetext.Clean: control characters
// and bytes that are not UTF-8 as Go escapes; then HTML).
// Errors: the page or the thumbnail folder cannot be written; a
// thumbnail that cannot be made is left out with a note on the page.
func WriteGallery(od *OutDir, results []FileResult) error {
	if od == nil || od.State == nil {
		return nil
	}
	gdir := filepath.Join(od.Path, GalleryDir)
	if err := os.Mkdir(gdir, 0o777); err != nil && !os.IsExist(err) {
		return fmt.Errorf("gallery %s: %w", gdir, err)
	}
	if err := fileperm.CheckDir(gdir); err != nil {
		return fmt.Errorf("gallery %s: %w", gdir, err)
	}
	byInput := map[string]*galleryEntry{}
	var entries []*galleryEntry
	entry := func(input string) *galleryEntry {
		if e := byInput[input]; e != nil {
			return e
		}
		e := &galleryEntry{Input: input}
		byInput[input] = e
		entries = append(entries, e)
		return e
	}
	keep := map[string]bool{}
	recs := od.State.Records()
	sort.Slice(recs, func(i, j int) bool { return recs[i].Output < recs[j].Output })
	for _, r := range recs {
		if _, err := os.Lstat(filepath.Join(od.Path, filepath.FromSlash(r.Output))); err != nil {
			continue // removed since: not shown
		}
		key := r.InputAbs
		if key == "" {
			key = r.Input
		}
		e := entry(key)
		e.Shown = r.Input
		e.Outputs = append(e.Outputs, r.Output)
		if e.Camera == "" {
			e.Camera = r.Camera
		}
		if e.Captured == "" {
			e.Captured = r.CaptureTime
		}
		if e.Lens == "" && e.Rating == "" && e.Label == "" {
			if m, err := header.ReadMeta(r.Input); err == nil {
				e.Rating, e.Label = m.Rating, m.Label
				for _, t := range m.Tags {
					if t.ID == lensModelTag {
						e.Lens = strings.TrimRight(string(t.Value), "\x00 ")
					}
				}
			}
		}
	}
	// Failures by absolute input: the input as given, and the reason.
	// A failure record keeps names as JSON does (each byte that is not
	// UTF-8 as U+FFFD): inputs are matched in that form.
	type failure struct{ input, reason string }
	jsonName := func(s string) string { return bytetext.ReplaceInvalid(s, func(byte) string { return "\uFFFD" }) }
	// The thumbnail is made from the smallest output Go can read (a
	// preset's small WebP, not its full-size TIFF).
	bySize := append([]state.Record(nil), recs...)
	sort.SliceStable(bySize, func(i, j int) bool { return bySize[i].OutputSize < bySize[j].OutputSize })
	for _, r := range bySize {
		key := r.InputAbs
		if key == "" {
			key = r.Input
		}
		e := byInput[key]
		if e == nil || e.Thumb != "" || r.OutputHash == "" {
			continue
		}
		if name, ok := galleryThumb(od.Path, gdir, r.Output, r.OutputHash); ok {
			e.Thumb = path.Join(GalleryDir, name)
			keep[name] = true
		}
	}
	failed := map[string]failure{}
	for _, f := range od.State.Failures() {
		reason := f.Message
		if reason == "" {
			reason = f.Kind
		}
		failed[jsonName(f.InputAbs)] = failure{f.Input, reason}
	}
	for _, fr := range results {
		if fr.Status == StatusFailed && fr.Err != nil {
			failed[jsonName(fr.absInput())] = failure{fr.Input, fr.Err.Error()}
		}
	}
	converted := map[string]bool{}
	for in, e := range byInput {
		if len(e.Outputs) > 0 {
			converted[jsonName(in)] = true
		}
	}
	for in, f := range failed {
		if converted[in] {
			continue // converted since
		}
		e := entry(in)
		// The reason names the file first ("in/x.dng: corrupt ..."): the
		// page shows the name once.
		e.Shown, e.Reason = f.input, strings.TrimPrefix(f.reason, f.input+": ")
	}
	for _, e := range entries {
		e.sortKey = e.Captured
	}
	sort.SliceStable(entries, func(i, j int) bool {
		a, b := entries[i], entries[j]
		if a.sortKey != b.sortKey {
			return a.sortKey < b.sortKey
		}
		return a.Shown < b.Shown
	})
	// Thumbnails of outputs no longer recorded (replaced, removed) go.
	if names, err := os.ReadDir(gdir); err == nil {
		for _, n := range names {
			if strings.HasSuffix(n.Name(), ".jpg") && !keep[n.Name()] {
				os.Remove(filepath.Join(gdir, n.Name()))
			}
		}
	}
	page := filepath.Join(od.Path, GalleryPage)
	if fi, err := os.Lstat(page); err == nil {
		// Not through a link (dangling or not): what is there is the
		// user's unless it is a page rawbatch wrote.
		var old []byte
		if fi.Mode().IsRegular() {
			if f, err := os.OpenFile(page, os.O_RDONLY|syscall.O_NOFOLLOW, 0); err == nil {
				old, _ = io.ReadAll(io.LimitReader(f, 64<<20))
				f.Close()
			}
		}
		if !bytes.Contains(old, []byte(galleryMark)) {
			return fmt.Errorf("gallery %s: a page rawbatch did not write is in the way; remove or rename it", page)
		}
	}
	return atomicfile.Write(page, galleryHTML(entries), atomicfile.Options{})
}

// galleryThumb makes (or finds) the thumbnail of the output rel of
// OUTDIR whose content hash is hash, in gdir; its name, and false when
// the output cannot be decoded (a format Go does not read, a damaged
// file).
func galleryThumb(outDir, gdir, rel, hash string) (string, bool) {
	sum := sha256.Sum256([]byte(thumbVersion + "\x00" + rel + "\x00" + hash))
	name := hex.EncodeToString(sum[:12]) + ".jpg"
	p := filepath.Join(gdir, name)
	if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() {
		return name, true
	}
	f, err := os.OpenFile(filepath.Join(outDir, filepath.FromSlash(rel)), os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return "", false
	}
	b, err := io.ReadAll(io.LimitReader(f, maxThumbFile+1))
	f.Close()
	if err != nil || len(b) > maxThumbFile {
		return "", false
	}
	thumb, err := pipeline.Thumbnail(b, thumbLongEdge, maxThumbSource)
	if err != nil {
		return "", false
	}
	if err := atomicfile.Write(p, thumb, atomicfile.Options{}); err != nil {
		return "", false
	}
	return name, true
}

// labelColours are the CSS colours of the XMP labels Lightroom and
// darktable use.
var labelColours = map[string]string{
	"red": "#d33", "yellow": "#db3", "green": "#3a3", "blue": "#36c", "purple": "#939",
}

// galleryHTML is the page of entries.
func galleryHTML(entries []*galleryEntry) []byte {
	esc := func(s string) string { return html.EscapeString(bytetext.Clean(s)) }
	var b bytes.Buffer
	nOK, nFail := 0, 0
	for _, e := range entries {
		if e.Reason != "" {
			nFail++
		} else {
			nOK++
		}
	}
	b.WriteString(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
` + galleryMark + `
<title>rawbatch gallery</title>
<style>
body{font-family:sans-serif;margin:1em;background:#222;color:#eee}
.grid{display:flex;flex-wrap:wrap;gap:12px}
figure{margin:0;width:256px;background:#333;padding:6px;border-radius:4px;border-top:6px solid #333}
figure img{width:256px;height:256px;object-fit:contain;background:#111;display:block}
figcaption{font-size:12px;line-height:1.4;word-break:break-all}
.failed{background:#522}
.rating{color:#fc3}
a{color:#8bf}
</style></head><body>
`)
	fmt.Fprintf(&b, "<h1>rawbatch gallery</h1>\n<p>%d converted, %d failed</p>\n<div class=\"grid\">\n", nOK, nFail)
	for _, e := range entries {
		if e.Reason != "" {
			continue
		}
		style := ""
		if c, ok := labelColours[strings.ToLower(e.Label)]; ok {
			style = fmt.Sprintf(` style="border-top-color:%s"`, c)
		}
		fmt.Fprintf(&b, "<figure class=\"file\"%s>", style)
		if e.Thumb != "" {
			fmt.Fprintf(&b, `<a href="%s"><img src="%s" alt="%s"></a>`, esc(urlPath(e.Outputs[0])), esc(urlPath(e.Thumb)), esc(path.Base(e.Outputs[0])))
		} else {
			b.WriteString(`<p>(no thumbnail: output not readable here)</p>`)
		}
		b.WriteString("<figcaption>")
		fmt.Fprintf(&b, "<b class=\"name\">%s</b><br>", esc(filepath.Base(e.Shown)))
		for _, o := range e.Outputs {
			fmt.Fprintf(&b, "<a href=\"%s\">%s</a><br>", esc(urlPath(o)), esc(o))
		}
		row := func(k, v string) {
			if v != "" {
				fmt.Fprintf(&b, "%s: <span class=\"%s\">%s</span><br>", k, strings.ToLower(k), esc(v))
			}
		}
		row("Camera", e.Camera)
		row("Lens", e.Lens)
		row("Captured", captureText(e.Captured))
		if e.Rating != "" {
			fmt.Fprintf(&b, "Rating: <span class=\"rating\">%s</span><br>", esc(ratingText(e.Rating)))
		}
		row("Label", e.Label)
		b.WriteString("</figcaption></figure>\n")
	}
	b.WriteString("</div>\n")
	if nFail > 0 {
		b.WriteString("<h2>Failed</h2>\n<ul class=\"failures\">\n")
		for _, e := range entries {
			if e.Reason != "" {
				fmt.Fprintf(&b, "<li class=\"failed\"><b>%s</b>: %s</li>\n", esc(e.Shown), esc(e.Reason))
			}
		}
		b.WriteString("</ul>\n")
	}
	b.WriteString("</body></html>\n")
	return b.Bytes()
}

// captureText shows a record's capture time ("2006:01:02 15:04:05",
// EXIF's form) as "2006-01-02 15:04:05".
func captureText(s string) string {
	if len(s) >= 10 && s[4] == ':' && s[7] == ':' {
		return s[:4] + "-" + s[5:7] + "-" + s[8:]
	}
	return s
}

// ratingText shows an XMP rating as stars ("-1": rejected).
func ratingText(r string) string {
	switch r {
	case "-1":
		return "rejected"
	case "0":
		return "unrated"
	case "1", "2", "3", "4", "5":
		n := int(r[0] - '0')
		return strings.Repeat("★", n) + strings.Repeat("☆", 5-n)
	}
	return r
}

// urlPath is a slash-separated relative path as a URL path: each element
// percent-escaped (a name with '#', '?', '%' or bytes that are not UTF-8).
func urlPath(rel string) string {
	parts := strings.Split(rel, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return strings.Join(parts, "/")
}
