package encode

import (
	"bytes"
	"encoding/xml"
)

// XMP is what an output's XMP packet says (XMP Specification Part 1,
// ISO 16684-1; the properties of Part 2 §8.4 and §8.6).
type XMP struct {
	// DerivedFrom is the raw file's name (its base name, no folders),
	// written as xmpMM:DerivedFrom with stRef:filePath.
	DerivedFrom string
	// Rating is xmp:Rating (an integer -1..5 as text, -1 = rejected) and
	// Label xmp:Label; each written only when non-empty.
	Rating, Label string
	// Keywords are dc:subject (an rdf:Bag), Hierarchical
	// lr:hierarchicalSubject (an rdf:Bag of "A|B|C" paths), Creator
	// dc:creator (an rdf:Seq); Title, Description and Rights dc:title,
	// dc:description and dc:rights (an rdf:Alt of one x-default item).
	// Each written only when non-empty.
	Keywords, Hierarchical, Creator []string
	Title, Description, Rights      string
}

func (x XMP) empty() bool {
	return x.DerivedFrom == "" && x.Rating == "" && x.Label == "" && len(x.Keywords) == 0 &&
		len(x.Hierarchical) == 0 && len(x.Creator) == 0 && x.Title == "" && x.Description == "" && x.Rights == ""
}

// xmpJPEGSig starts the payload of the APP1 segment that holds XMP in a
// JPEG (XMP Specification Part 3 §1.1.3).
const xmpJPEGSig = "http://ns.adobe.com/xap/1.0/\x00"

// XMPPacket returns x as a UTF-8 XMP packet (RDF/XML in an x:xmpmeta
// element, wrapped in the xpacket processing instructions, read-only
// end="r" since no padding is left), or nil when x is empty.
func XMPPacket(x XMP) []byte {
	if x.empty() {
		return nil
	}
	return xmpPacket(x, xmpExtra{})
}

// xmpExtra is what an output adds to its XMP packet's rdf:Description:
// namespace declarations and attributes (NS, Attrs: ` xmlns:p="…"`,
// ` p:Name="…"` text) and elements (Body), already escaped.
type xmpExtra struct {
	NS, Attrs, Body string
}

// xmpPacket is XMPPacket with e added, written even when x is empty.
func xmpPacket(x XMP, e xmpExtra) []byte {
	esc := func(s string) string {
		var b bytes.Buffer
		xml.EscapeText(&b, []byte(s))
		return b.String()
	}
	var b bytes.Buffer
	b.WriteString("<?xpacket begin=\"\ufeff\" id=\"W5M0MpCehiHzreSzNTczkc9d\"?>\n")
	b.WriteString("<x:xmpmeta xmlns:x=\"adobe:ns:meta/\">\n")
	b.WriteString(" <rdf:RDF xmlns:rdf=\"http://www.w3.org/1999/02/22-rdf-syntax-ns#\">\n")
	b.WriteString("  <rdf:Description rdf:about=\"\"\n")
	b.WriteString("    xmlns:xmp=\"http://ns.adobe.com/xap/1.0/\"\n")
	b.WriteString("    xmlns:xmpMM=\"http://ns.adobe.com/xap/1.0/mm/\"\n")
	b.WriteString("    xmlns:dc=\"http://purl.org/dc/elements/1.1/\"\n")
	b.WriteString("    xmlns:lr=\"http://ns.adobe.com/lightroom/1.0/\"\n")
	b.WriteString("    xmlns:stRef=\"http://ns.adobe.com/xap/1.0/sType/ResourceRef#\"")
	b.WriteString(e.NS + e.Attrs + ">\n")
	b.WriteString(e.Body)
	if x.Rating != "" {
		b.WriteString("   <xmp:Rating>" + esc(x.Rating) + "</xmp:Rating>\n")
	}
	if x.Label != "" {
		b.WriteString("   <xmp:Label>" + esc(x.Label) + "</xmp:Label>\n")
	}
	array := func(prop, kind string, items []string) {
		if len(items) == 0 {
			return
		}
		b.WriteString("   <" + prop + ">\n    <rdf:" + kind + ">\n")
		for _, it := range items {
			b.WriteString("     <rdf:li>" + esc(it) + "</rdf:li>\n")
		}
		b.WriteString("    </rdf:" + kind + ">\n   </" + prop + ">\n")
	}
	alt := func(prop, v string) {
		if v == "" {
			return
		}
		b.WriteString("   <" + prop + ">\n    <rdf:Alt>\n     <rdf:li xml:lang=\"x-default\">" + esc(v) + "</rdf:li>\n    </rdf:Alt>\n   </" + prop + ">\n")
	}
	alt("dc:title", x.Title)
	alt("dc:description", x.Description)
	array("dc:creator", "Seq", x.Creator)
	alt("dc:rights", x.Rights)
	array("dc:subject", "Bag", x.Keywords)
	array("lr:hierarchicalSubject", "Bag", x.Hierarchical)
	if x.DerivedFrom != "" {
		b.WriteString("   <xmpMM:DerivedFrom rdf:parseType=\"Resource\">\n")
		b.WriteString("    <stRef:filePath>" + esc(x.DerivedFrom) + "</stRef:filePath>\n")
		b.WriteString("   </xmpMM:DerivedFrom>\n")
	}
	b.WriteString("  </rdf:Description>\n </rdf:RDF>\n</x:xmpmeta>\n")
	b.WriteString("<?xpacket end=\"r\"?>")
	return b.Bytes()
}

// xmpOf returns the packet an output of md carries: nil with md.Strip.
func xmpOf(md Metadata) []byte {
	if md.Strip {
		return nil
	}
	return XMPPacket(md.XMP)
}
