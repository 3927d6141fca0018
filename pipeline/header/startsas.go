package header

// StartsAs reports whether head, the first bytes of a file, is the start
// of a file of format as the signature table (signatures) describes it:
// format is a row's format name ("JPEG", "TIFF", "PNG", "WEBP", ...), and
// every byte of one of its rows' signature parts that head reaches matches,
// so a file cut short (killed mid-write) passes as far as it goes. An empty
// head passes; a format the table does not name does not.
func StartsAs(format string, head []byte) bool {
	known := false
	for _, s := range signatures {
		if s.format == format {
			known = true
			if startsWith(head, s.match) {
				return true
			}
		}
	}
	return known && len(head) == 0
}

// startsWith reports whether head agrees with every part of match over
// the bytes head has.
func startsWith(head []byte, match []part) bool {
	for _, p := range match {
		for i := 0; i < len(p.magic) && p.at+i < len(head); i++ {
			if head[p.at+i] != p.magic[i] {
				return false
			}
		}
	}
	return true
}
