package header

import "github.com/rawbatch/rawbatch/pipeline/tifftag"

// DNGOpcodeLists locates the opcode lists of a DNG's raw IFD in the file
// (DNG 1.4 §6: OpcodeList1 51008, OpcodeList2 51009, OpcodeList3 51022,
// UNDEFINED), so that the develop reads them when it applies them; the
// header's read budget is not spent on them.
type DNGOpcodeLists struct {
	// Offset (from the start of the file) and Length in bytes of
	// OpcodeList1, 2 and 3 at index 0, 1, 2; Length 0 when absent.
	Offset, Length [3]int64
}

// findOpcodeLists returns where the raw IFD d keeps its opcode lists, nil
// when it has none (or none whose value lies in the file).
func findOpcodeLists(t *tiffBlock, d *ifd) *DNGOpcodeLists {
	var l DNGOpcodeLists
	found := false
	for i, tag := range [3]uint16{tifftag.OpcodeList1, tifftag.OpcodeList2, tifftag.OpcodeList3} {
		e, ok := d.find(tag)
		if !ok {
			continue
		}
		if pos, n, ok := t.valueAt(e); ok && n > 0 {
			l.Offset[i], l.Length[i] = pos, n
			found = true
		}
	}
	if !found {
		return nil
	}
	return &l
}
