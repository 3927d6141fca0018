// Package sidecar reads the XMP metadata a photographer's editor keeps
// for a raw file: a sidecar NAME.xmp (Adobe) or NAME.EXT.xmp (darktable)
// next to it, or the packet inside the file (TIFF tag 700, as Lightroom
// writes into a DNG). It reads and never writes.
package sidecar

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Namespaces of the properties read (XMP Specification Part 2 §8.3, §8.4;
// Adobe Lightroom's lr namespace).
const (
	nsRDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
	nsXMP = "http://ns.adobe.com/xap/1.0/"
	nsDC  = "http://purl.org/dc/elements/1.1/"
	nsLR  = "http://ns.adobe.com/lightroom/1.0/"
	nsDT  = "http://darktable.sf.net/"
	// nsDK is digiKam's namespace (digiKam:PickLabel, digiKam:ColorLabel);
	// nsDM the XMP Dynamic Media schema (xmpDM:pick, Adobe Bridge's pick
	// flag); nsTIFF the TIFF properties (tiff:Orientation); nsCRS Adobe
	// Camera Raw's settings (crs:, Lightroom's and Camera Raw's sidecars).
	nsDK   = "http://www.digikam.org/ns/1.0/"
	nsDM   = "http://ns.adobe.com/xmp/1.0/DynamicMedia/"
	nsTIFF = "http://ns.adobe.com/tiff/1.0/"
	nsCRS  = "http://ns.adobe.com/camera-raw-settings/1.0/"
)

// digiKamLabels are the colour names of digiKam's digiKam:ColorLabel
// numbers (1 red ... 9 white; 0 none), spelt as Lightroom's xmp:Label.
var digiKamLabels = []string{"", "Red", "Orange", "Yellow", "Green", "Blue", "Magenta", "Gray", "Black", "White"}

// darktableLabels are the colour names of darktable's darktable:colorlabels
// numbers (0 red ... 4 purple), spelt as Lightroom's xmp:Label.
var darktableLabels = []string{"Red", "Yellow", "Green", "Blue", "Purple"}

// MaxSize is the largest sidecar read, in bytes; a longer one is a
// malformed sidecar.
const MaxSize = 1 << 20

// Meta is what an XMP packet says of a photograph that its outputs carry
// and the batch filters on. Empty fields were absent.
type Meta struct {
	// Rating is xmp:Rating as an integer -1..5 in text (-1 rejected),
	// "" when absent or out of range; Label is xmp:Label, else the first
	// of darktable's darktable:colorlabels as its colour name ("Red").
	Rating, Label string
	// Keywords are dc:subject's items; Hierarchical lr:hierarchicalSubject's
	// ("Places|France|Paris"), each in the packet's order.
	Keywords, Hierarchical []string
	// Title, Description and Rights are the first (x-default) item of
	// dc:title, dc:description and dc:rights; Creator dc:creator's items.
	Title, Description, Rights string
	Creator                    []string
	// Pick is the pick flag, "pick", "reject" or "" (none): xmpDM:pick
	// (1 pick, -1 reject; Adobe Bridge), else digiKam:PickLabel (3
	// accepted, 1 rejected; 2 pending is none). Lightroom keeps its flags
	// in its catalogue, not in XMP; darktable rejects by xmp:Rating -1.
	Pick string `json:",omitempty"`
	// Develop are the editor's develop settings rawbatch can apply
	// (--sidecar geometry and basic); nil when the packet has none.
	Develop *Develop `json:",omitempty"`
}

// Rejected reports whether m marks the photograph rejected: rating -1 or
// the reject pick flag.
func (m Meta) Rejected() bool { return m.Rating == "-1" || m.Pick == "reject" }

// Develop are the develop settings of an XMP packet that rawbatch applies:
// plain values only (darktable's and digiKam's edits live in their
// history stacks and databases: not read). Nil fields were absent.
type Develop struct {
	// Orientation is tiff:Orientation, 1..8 (EXIF's values; 0 absent):
	// the rotation and mirroring the editor shows the stored image with.
	Orientation int `json:",omitempty"`
	// Crop is crs:HasCrop and the crop (nil when crs:HasCrop is absent).
	Crop *Crop `json:",omitempty"`
	// Exposure is crs:Exposure2012 (else crs:Exposure, the process 2010
	// name), in EV.
	Exposure *float64 `json:",omitempty"`
	// WhiteBalance is crs:WhiteBalance with crs:Temperature and crs:Tint
	// (nil when crs:WhiteBalance is absent).
	WhiteBalance *WhiteBalance `json:",omitempty"`
}

// Crop is Camera Raw's crop: with Has, the crop rectangle's upper-left
// corner (Left, Top) and lower-right corner (Right, Bottom) as fractions
// of the width and height of the image as stored (before the
// orientation), the rectangle turned by Angle degrees about its centre
// (crs:CropLeft, CropTop, CropRight, CropBottom, CropAngle; the corners
// are those of the turned rectangle).
type Crop struct {
	Has                      bool
	Top, Left, Bottom, Right float64
	Angle                    float64
}

// WhiteBalance is Camera Raw's white balance: Mode is crs:WhiteBalance
// ("As Shot", "Auto", "Custom", "Daylight", ...), Temperature crs:Temperature
// in kelvin (0 absent) and Tint crs:Tint (green −, magenta +).
type WhiteBalance struct {
	Mode        string
	Temperature float64
	Tint        float64
}

// Empty reports whether m holds nothing.
func (m Meta) Empty() bool {
	return m.Rating == "" && m.Label == "" && len(m.Keywords) == 0 && len(m.Hierarchical) == 0 &&
		m.Title == "" && m.Description == "" && m.Rights == "" && len(m.Creator) == 0
}

// Over returns m with every field s has set taken from s: a sidecar's
// fields over the file's own packet.
func (m Meta) Over(s Meta) Meta {
	str := func(a *string, b string) {
		if b != "" {
			*a = b
		}
	}
	list := func(a *[]string, b []string) {
		if len(b) > 0 {
			*a = b
		}
	}
	str(&m.Rating, s.Rating)
	str(&m.Label, s.Label)
	list(&m.Keywords, s.Keywords)
	list(&m.Hierarchical, s.Hierarchical)
	str(&m.Pick, s.Pick)
	if s.Develop != nil {
		m.Develop = m.Develop.over(*s.Develop)
	}
	str(&m.Title, s.Title)
	str(&m.Description, s.Description)
	str(&m.Rights, s.Rights)
	list(&m.Creator, s.Creator)
	return m
}

// over returns d (nil: nothing) with every field s has set taken from s.
func (d *Develop) over(s Develop) *Develop {
	var o Develop
	if d != nil {
		o = *d
	}
	if s.Orientation != 0 {
		o.Orientation = s.Orientation
	}
	if s.Crop != nil {
		o.Crop = s.Crop
	}
	if s.Exposure != nil {
		o.Exposure = s.Exposure
	}
	if s.WhiteBalance != nil {
		o.WhiteBalance = s.WhiteBalance
	}
	return &o
}

// Key is a text that changes exactly when a field of m that outputs'
// metadata carry changes (not Pick or Develop), for an output's
// freshness: "" for an empty m.
func (m Meta) Key() string {
	if m.Empty() {
		return ""
	}
	var b strings.Builder
	for _, f := range []struct {
		k string
		v []string
	}{{"rating", []string{m.Rating}}, {"label", []string{m.Label}}, {"keywords", m.Keywords},
		{"hier", m.Hierarchical}, {"title", []string{m.Title}}, {"desc", []string{m.Description}},
		{"rights", []string{m.Rights}}, {"creator", m.Creator}} {
		b.WriteString(f.k)
		for _, v := range f.v {
			b.WriteString("\x00" + strconv.Quote(v))
		}
		b.WriteString("\x01")
	}
	return b.String()
}

// ErrMalformed is the kind of error Parse returns for a packet that is
// not well-formed XML or is too long.
var ErrMalformed = errors.New("malformed XMP")

// Parse reads the properties of Meta from an XMP packet (RDF/XML, XMP
// Specification Part 1 §7.9): a simple property as an attribute of
// rdf:Description or as a child element, an array as rdf:Bag, rdf:Seq or
// rdf:Alt of rdf:li items (of an Alt, the x-default item, else the first).
// Trailing NUL padding (a TIFF tag's) is ignored. The error wraps
// ErrMalformed.
func Parse(b []byte) (Meta, error) {
	b = bytes.TrimRight(b, "\x00 \t\r\n")
	if len(b) > MaxSize {
		return Meta{}, fmt.Errorf("%w: longer than %d bytes", ErrMalformed, MaxSize)
	}
	props, err := properties(b)
	if err != nil {
		return Meta{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	var m Meta
	first := func(ns, local string) string {
		p := props[xml.Name{Space: ns, Local: local}]
		if p == nil {
			return ""
		}
		if p.def != "" {
			return p.def
		}
		if len(p.items) > 0 {
			return p.items[0]
		}
		return p.value
	}
	all := func(ns, local string) []string {
		p := props[xml.Name{Space: ns, Local: local}]
		if p == nil {
			return nil
		}
		if len(p.items) > 0 {
			return p.items
		}
		if p.value != "" {
			return []string{p.value}
		}
		return nil
	}
	if r := first(nsXMP, "Rating"); r != "" {
		if v, err := strconv.ParseFloat(r, 64); err == nil && v >= -1 && v <= 5 {
			m.Rating = strconv.Itoa(int(v))
		}
	}
	m.Label = first(nsXMP, "Label")
	if m.Label == "" {
		// darktable keeps its colour labels as numbers; the first is
		// taken as the label.
		for _, v := range all(nsDT, "colorlabels") {
			if n, err := strconv.Atoi(v); err == nil && n >= 0 && n < len(darktableLabels) {
				m.Label = darktableLabels[n]
				break
			}
		}
	}
	m.Keywords = all(nsDC, "subject")
	m.Hierarchical = all(nsLR, "hierarchicalSubject")
	m.Title = first(nsDC, "title")
	m.Description = first(nsDC, "description")
	m.Rights = first(nsDC, "rights")
	m.Creator = all(nsDC, "creator")
	if m.Label == "" {
		if n, err := strconv.Atoi(first(nsDK, "ColorLabel")); err == nil && n > 0 && n < len(digiKamLabels) {
			m.Label = digiKamLabels[n]
		}
	}
	switch first(nsDM, "pick") {
	case "1":
		m.Pick = "pick"
	case "-1":
		m.Pick = "reject"
	}
	if m.Pick == "" {
		switch first(nsDK, "PickLabel") {
		case "3":
			m.Pick = "pick"
		case "1":
			m.Pick = "reject"
		}
	}
	m.Develop = develop(first)
	return m, nil
}

// The ranges of the develop values taken (Camera Raw's sliders go to
// ±5 EV, 2000..50000 K and ±150 tint); a value outside is absent.
const (
	maxExposure                    = 10.0
	minTemperature, maxTemperature = 1000.0, 100000.0
	maxTint                        = 300.0
)

// develop reads the Develop settings through first (Parse's lookup of a
// property's text); nil when none is set. A value that is not a finite
// number, or out of range, is absent; a crop whose corners are not numbers
// in [-1, 2] is absent.
func develop(first func(ns, local string) string) *Develop {
	var d Develop
	num := func(ns, local string) (float64, bool) {
		t := strings.TrimPrefix(first(ns, local), "+")
		if t == "" {
			return 0, false
		}
		v, err := strconv.ParseFloat(t, 64)
		return v, err == nil && !math.IsNaN(v) && !math.IsInf(v, 0)
	}
	if o, ok := num(nsTIFF, "Orientation"); ok && o >= 1 && o <= 8 && o == math.Trunc(o) {
		d.Orientation = int(o)
	}
	if h := first(nsCRS, "HasCrop"); h != "" {
		c := Crop{Has: strings.EqualFold(h, "true")}
		if c.Has {
			var ok [5]bool
			c.Top, ok[0] = num(nsCRS, "CropTop")
			c.Left, ok[1] = num(nsCRS, "CropLeft")
			c.Bottom, ok[2] = num(nsCRS, "CropBottom")
			c.Right, ok[3] = num(nsCRS, "CropRight")
			c.Angle, ok[4] = num(nsCRS, "CropAngle")
			if !ok[4] {
				c.Angle, ok[4] = 0, true
			}
			for i, v := range []float64{c.Top, c.Left, c.Bottom, c.Right} {
				ok[i] = ok[i] && v >= -1 && v <= 2
			}
			if ok != [5]bool{true, true, true, true, true} {
				c = Crop{}
			}
		}
		d.Crop = &c
	}
	if v, ok := num(nsCRS, "Exposure2012"); ok && math.Abs(v) <= maxExposure {
		d.Exposure = &v
	} else if v, ok := num(nsCRS, "Exposure"); ok && math.Abs(v) <= maxExposure {
		d.Exposure = &v
	}
	if mode := first(nsCRS, "WhiteBalance"); mode != "" {
		wb := WhiteBalance{Mode: mode}
		t, okT := num(nsCRS, "Temperature")
		tint, okTint := num(nsCRS, "Tint")
		if okT && t >= minTemperature && t <= maxTemperature && (!okTint || math.Abs(tint) <= maxTint) {
			wb.Temperature, wb.Tint = t, tint
		}
		d.WhiteBalance = &wb
	}
	if d == (Develop{}) {
		return nil
	}
	return &d
}

// property is one property's value: a simple value, or an array's items
// (def: an Alt's x-default item).
type property struct {
	value string
	items []string
	def   string
}

// properties returns the properties of every rdf:Description of the
// packet, by qualified name; a later one replaces an earlier one.
func properties(b []byte) (map[xml.Name]*property, error) {
	props := map[xml.Name]*property{}
	d := xml.NewDecoder(bytes.NewReader(b))
	d.Strict = true
	// The stack of open elements: 0 outside a Description, 1 in one, 2 in
	// a property element, more inside its array.
	depth := 0
	var cur *property
	var text strings.Builder
	var inLi bool
	var liLang string
	sawRDF := false
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			t.Name = bound(t.Name)
			for i := range t.Attr {
				t.Attr[i].Name = bound(t.Attr[i].Name)
			}
			switch {
			case depth == 0 && t.Name.Space == nsRDF && t.Name.Local == "Description":
				sawRDF = true
				depth = 1
				for _, a := range t.Attr {
					if a.Name.Space == nsRDF || a.Name.Space == "xmlns" || a.Name.Space == "" || a.Name.Space == "http://www.w3.org/XML/1998/namespace" {
						continue
					}
					props[a.Name] = &property{value: strings.TrimSpace(a.Value)}
				}
			case depth == 1:
				depth = 2
				cur = &property{}
				props[t.Name] = cur
				text.Reset()
			case depth >= 2:
				depth++
				if t.Name.Space == nsRDF && t.Name.Local == "li" {
					inLi = true
					text.Reset()
					liLang = ""
					for _, a := range t.Attr {
						if a.Name.Local == "lang" {
							liLang = a.Value
						}
					}
				}
			default:
				if depth > 0 {
					depth++
				} else if t.Name.Space == nsRDF && t.Name.Local == "RDF" {
					sawRDF = true
				}
			}
		case xml.CharData:
			if depth >= 2 {
				text.Write(t)
			}
		case xml.EndElement:
			t.Name = bound(t.Name)
			switch {
			case depth == 1:
				depth = 0
			case depth == 2:
				if cur != nil && len(cur.items) == 0 {
					cur.value = strings.TrimSpace(text.String())
				}
				cur = nil
				depth = 1
			case depth > 2:
				if inLi && t.Name.Space == nsRDF && t.Name.Local == "li" {
					v := strings.TrimSpace(text.String())
					cur.items = append(cur.items, v)
					if liLang == "x-default" && cur.def == "" {
						cur.def = v
					}
					inLi = false
					text.Reset()
				}
				depth--
			}
		}
	}
	if !sawRDF {
		return nil, errors.New("no rdf:RDF or rdf:Description")
	}
	return props, nil
}

// prefixes are the namespaces of the conventional prefixes, for a
// packet that uses a prefix without declaring it (encoding/xml then gives
// the prefix as the name's Space).
var prefixes = map[string]string{"rdf": nsRDF, "xmp": nsXMP, "dc": nsDC, "lr": nsLR, "darktable": nsDT,
	"digiKam": nsDK, "xmpDM": nsDM, "tiff": nsTIFF, "crs": nsCRS}

func bound(n xml.Name) xml.Name {
	if ns, ok := prefixes[n.Space]; ok {
		n.Space = ns
	}
	return n
}

// Names returns the sidecar names of the raw file at path, in the order
// looked for: NAME.EXT.xmp (darktable), NAME.xmp (Adobe), each in lower
// and upper case.
func Names(path string) []string {
	stem := strings.TrimSuffix(path, filepath.Ext(path))
	return []string{path + ".xmp", path + ".XMP", stem + ".xmp", stem + ".XMP"}
}

// Found is the sidecar chosen for a raw file.
type Found struct {
	// Path is the sidecar read ("" when none); ModTime its modification
	// time.
	Path    string
	ModTime time.Time
	// Note, when both an Adobe and a darktable sidecar exist, says which
	// one was taken (the newer) and which was not.
	Note string
}

// Find returns the sidecar of the raw file at path: of NAME.EXT.xmp and
// NAME.xmp (Names) the regular file modified last; a tie goes to
// NAME.EXT.xmp. Nothing is read but the directory entries.
func Find(path string) Found {
	var found []Found
	for _, n := range Names(path) {
		st, err := os.Stat(n)
		if err != nil || !st.Mode().IsRegular() {
			continue
		}
		dup := false
		for _, f := range found {
			if g, err := os.Stat(f.Path); err == nil && os.SameFile(g, st) {
				dup = true // a case-insensitive file system
			}
		}
		if !dup {
			found = append(found, Found{Path: n, ModTime: st.ModTime()})
		}
	}
	if len(found) == 0 {
		return Found{}
	}
	best := found[0]
	for _, f := range found[1:] {
		if f.ModTime.After(best.ModTime) {
			best = f
		}
	}
	if len(found) > 1 {
		var others []string
		for _, f := range found {
			if f.Path != best.Path {
				others = append(others, f.Path)
			}
		}
		best.Note = fmt.Sprintf("sidecars %s and %s both exist; reading the newer, %s", best.Path, strings.Join(others, ", "), best.Path)
	}
	return best
}

// Read returns the Meta of the sidecar of the raw file at path (Find),
// the Found, and warnings: the note of two sidecars, and a sidecar that
// cannot be read or parsed (then Meta is empty: the file converts without
// it). No sidecar is no warning.
func Read(path string) (Meta, Found, []string) {
	f := Find(path)
	if f.Path == "" {
		return Meta{}, f, nil
	}
	var warns []string
	if f.Note != "" {
		warns = append(warns, f.Note)
	}
	b, err := readLimited(f.Path)
	if err != nil {
		return Meta{}, f, append(warns, fmt.Sprintf("%s: sidecar not read: %v; converting without it", f.Path, err))
	}
	m, err := Parse(b)
	if err != nil {
		return Meta{}, f, append(warns, fmt.Sprintf("%s: sidecar ignored: %v; converting without it", f.Path, err))
	}
	return m, f, warns
}

func readLimited(p string) ([]byte, error) {
	fh, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	b, err := io.ReadAll(io.LimitReader(fh, MaxSize+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxSize {
		return nil, fmt.Errorf("%w: longer than %d bytes", ErrMalformed, MaxSize)
	}
	return b, nil
}
