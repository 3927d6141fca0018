package sidecar

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

const head = `<?xpacket begin="` + "\ufeff" + `" id="W5M0MpCehiHzreSzNTczkc9d"?>
<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">`
const tail = `</rdf:RDF></x:xmpmeta><?xpacket end="w"?>`

// lightroom is a Lightroom-style sidecar: simple properties as
// attributes, arrays as elements.
const lightroom = head + `<rdf:Description rdf:about=""
 xmlns:xmp="http://ns.adobe.com/xap/1.0/" xmlns:dc="http://purl.org/dc/elements/1.1/"
 xmlns:lr="http://ns.adobe.com/lightroom/1.0/" xmp:Rating="4" xmp:Label="Red">
 <dc:title><rdf:Alt><rdf:li xml:lang="fr-FR">Pont</rdf:li><rdf:li xml:lang="x-default">Bridge &amp; river</rdf:li></rdf:Alt></dc:title>
 <dc:description><rdf:Alt><rdf:li xml:lang="x-default">At dusk</rdf:li></rdf:Alt></dc:description>
 <dc:creator><rdf:Seq><rdf:li>Ann Smith</rdf:li></rdf:Seq></dc:creator>
 <dc:rights><rdf:Alt><rdf:li xml:lang="x-default">CC BY 4.0</rdf:li></rdf:Alt></dc:rights>
 <dc:subject><rdf:Bag><rdf:li>bridge</rdf:li><rdf:li>Paris</rdf:li></rdf:Bag></dc:subject>
 <lr:hierarchicalSubject><rdf:Bag><rdf:li>Places|France|Paris</rdf:li></rdf:Bag></lr:hierarchicalSubject>
</rdf:Description>` + tail

// darktable is a darktable-style sidecar: the rating an element, the
// colour labels as numbers, other properties ignored, two Descriptions.
const darktable = head + `<rdf:Description rdf:about="" xmlns:darktable="http://darktable.sf.net/"
 darktable:xmp_version="5"/><rdf:Description rdf:about="" xmlns:xmp="http://ns.adobe.com/xap/1.0/" xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:darktable="http://darktable.sf.net/">
 <xmp:Rating>-1</xmp:Rating>
 <dc:subject><rdf:Bag><rdf:li>darktable|format|dng</rdf:li></rdf:Bag></dc:subject>
 <darktable:colorlabels><rdf:Seq><rdf:li>2</rdf:li><rdf:li>0</rdf:li></rdf:Seq></darktable:colorlabels>
</rdf:Description>` + tail

func TestParse(t *testing.T) {
	for _, c := range []struct {
		name, packet string
		want         Meta
	}{
		{"lightroom", lightroom, Meta{Rating: "4", Label: "Red", Keywords: []string{"bridge", "Paris"},
			Hierarchical: []string{"Places|France|Paris"}, Title: "Bridge & river", Description: "At dusk",
			Rights: "CC BY 4.0", Creator: []string{"Ann Smith"}}},
		{"darktable", darktable, Meta{Rating: "-1", Label: "Green", Keywords: []string{"darktable|format|dng"}}},
		{"undeclared prefixes", `<x:xmpmeta><rdf:Description xmp:Rating="2" xmp:Label="Green"/></x:xmpmeta>`, Meta{Rating: "2", Label: "Green"}},
		{"rating out of range", head + `<rdf:Description xmlns:xmp="http://ns.adobe.com/xap/1.0/"><xmp:Rating>9</xmp:Rating></rdf:Description>` + tail, Meta{}},
		{"tag padding", lightroom + "\x00\x00\x00", Meta{Rating: "4", Label: "Red", Keywords: []string{"bridge", "Paris"},
			Hierarchical: []string{"Places|France|Paris"}, Title: "Bridge & river", Description: "At dusk",
			Rights: "CC BY 4.0", Creator: []string{"Ann Smith"}}},
	} {
		got, err := Parse([]byte(c.packet))
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: got %+v, want %+v", c.name, got, c.want)
		}
	}
	for _, bad := range []string{head + `<rdf:Description xmp:Rating="3">` + tail, "not xml at all", ""} {
		if _, err := Parse([]byte(bad)); !errors.Is(err, ErrMalformed) {
			t.Errorf("%q: error %v, want ErrMalformed", bad, err)
		}
	}
}

// TestRead: of IMG.xmp and IMG.EXT.xmp the newer is read, with a note
// naming both; a malformed sidecar is a warning naming it and no Meta.
func TestRead(t *testing.T) {
	dir := t.TempDir()
	raw := filepath.Join(dir, "IMG_1.CR2")
	adobe, dt := filepath.Join(dir, "IMG_1.xmp"), filepath.Join(dir, "IMG_1.CR2.xmp")
	if m, f, w := Read(raw); !m.Empty() || f.Path != "" || w != nil {
		t.Fatalf("no sidecar: %+v %+v %q", m, f, w)
	}
	os.WriteFile(adobe, []byte(lightroom), 0o644)
	os.WriteFile(dt, []byte(darktable), 0o644)
	old := time.Now().Add(-time.Hour)
	os.Chtimes(dt, old, old)
	m, f, w := Read(raw)
	if f.Path != adobe || m.Rating != "4" || len(w) != 1 || !strings.Contains(w[0], dt) || !strings.Contains(w[0], "reading the newer, "+adobe) {
		t.Errorf("adobe newer: %s rating %q warnings %q", f.Path, m.Rating, w)
	}
	os.Chtimes(adobe, old.Add(-time.Hour), old.Add(-time.Hour))
	if m, f, _ = Read(raw); f.Path != dt || m.Rating != "-1" {
		t.Errorf("darktable newer: %s rating %q", f.Path, m.Rating)
	}
	os.Remove(adobe)
	os.WriteFile(dt, []byte(head+"<rdf:Description"), 0o644)
	if m, _, w = Read(raw); !m.Empty() || len(w) != 1 || !strings.Contains(w[0], dt+": sidecar ignored") {
		t.Errorf("malformed: %+v %q", m, w)
	}
}

// TestKey: the key changes with each field and is empty for no fields.
func TestKey(t *testing.T) {
	if (Meta{}).Key() != "" {
		t.Error("empty Meta has a key")
	}
	base := Meta{Rating: "3", Keywords: []string{"a"}}
	seen := map[string]bool{base.Key(): true}
	for _, m := range []Meta{{Rating: "4", Keywords: []string{"a"}}, {Rating: "3", Keywords: []string{"a", "b"}},
		{Rating: "3", Keywords: []string{"a"}, Title: "t"}, {Rating: "3", Hierarchical: []string{"a"}}} {
		if seen[m.Key()] {
			t.Errorf("%+v: key not distinct", m)
		}
		seen[m.Key()] = true
	}
}

// TestParseFlagsAndDevelop: pick flags (Bridge's xmpDM:pick, digiKam's
// PickLabel), digiKam's colour labels, and the develop settings rawbatch
// applies (tiff:Orientation, Camera Raw's crop, exposure and white
// balance) as attributes and as elements; a sidecar's develop fields over
// the packet's one by one.
func TestParseFlagsAndDevelop(t *testing.T) {
	one := 1.0
	for _, c := range []struct {
		name, packet string
		want         Meta
	}{
		{"bridge reject", head + `<rdf:Description xmlns:xmpDM="http://ns.adobe.com/xmp/1.0/DynamicMedia/" xmpDM:pick="-1"/>` + tail, Meta{Pick: "reject"}},
		{"digikam", head + `<rdf:Description xmlns:digiKam="http://www.digikam.org/ns/1.0/"><digiKam:PickLabel>3</digiKam:PickLabel><digiKam:ColorLabel>6</digiKam:ColorLabel></rdf:Description>` + tail,
			Meta{Pick: "pick", Label: "Magenta"}},
		{"digikam pending", head + `<rdf:Description xmlns:digiKam="http://www.digikam.org/ns/1.0/" digiKam:PickLabel="2" digiKam:ColorLabel="0"/>` + tail, Meta{}},
		{"lightroom develop", head + `<rdf:Description xmlns:crs="http://ns.adobe.com/camera-raw-settings/1.0/" xmlns:tiff="http://ns.adobe.com/tiff/1.0/"
 tiff:Orientation="8" crs:HasCrop="True" crs:CropTop="0.1" crs:CropLeft="0.2" crs:CropBottom="0.9" crs:CropRight="0.8" crs:CropAngle="-3.5"
 crs:Exposure2012="+1.00" crs:WhiteBalance="Custom" crs:Temperature="4150" crs:Tint="+12"/>` + tail,
			Meta{Develop: &Develop{Orientation: 8, Crop: &Crop{Has: true, Top: 0.1, Left: 0.2, Bottom: 0.9, Right: 0.8, Angle: -3.5},
				Exposure: &one, WhiteBalance: &WhiteBalance{Mode: "Custom", Temperature: 4150, Tint: 12}}}},
		{"no crop", head + `<rdf:Description xmlns:crs="http://ns.adobe.com/camera-raw-settings/1.0/"><crs:HasCrop>False</crs:HasCrop><crs:CropRight>1</crs:CropRight></rdf:Description>` + tail,
			Meta{Develop: &Develop{Crop: &Crop{}}}},
		{"crop not numbers", head + `<rdf:Description xmlns:crs="http://ns.adobe.com/camera-raw-settings/1.0/" crs:HasCrop="True" crs:CropTop="x"/>` + tail,
			Meta{Develop: &Develop{Crop: &Crop{}}}},
		{"orientation out of range", head + `<rdf:Description xmlns:tiff="http://ns.adobe.com/tiff/1.0/" tiff:Orientation="9"/>` + tail, Meta{}},
	} {
		got, err := Parse([]byte(c.packet))
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: got %+v (develop %+v), want %+v", c.name, got, got.Develop, c.want)
		}
	}
	if !(Meta{Pick: "reject"}).Rejected() || !(Meta{Rating: "-1"}).Rejected() || (Meta{Rating: "0", Pick: "pick"}).Rejected() {
		t.Error("Rejected")
	}
	two := 2.0
	own := Meta{Develop: &Develop{Orientation: 6, Exposure: &one}}
	m := own.Over(Meta{Develop: &Develop{Exposure: &two}})
	if m.Develop.Orientation != 6 || *m.Develop.Exposure != 2 || own.Develop.Exposure != &one {
		t.Errorf("Over: %+v (the packet's %+v)", m.Develop, own.Develop)
	}
	if (Meta{Pick: "pick", Develop: &Develop{Orientation: 3}}).Key() != "" {
		t.Error("the pick flag or a develop field is in the metadata Key")
	}
}
