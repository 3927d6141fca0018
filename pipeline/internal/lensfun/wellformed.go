package lensfun

import (
	"encoding/xml"
	"fmt"
	"io"
	"os"
)

// wellFormed reads the XML file at path to its end with Go's XML parser
// and returns an error wrapping ErrFormat, with the parser's message, when
// the file is not well-formed. lensfun's own loader (GLib's GMarkup,
// without its end-of-document check) accepts a file that ends inside an
// element, such as a truncated copy, and loads what it read up to there,
// so CheckDir asks this first. The declared encoding is not converted
// (lensfun's files are UTF-8 or ASCII); only the structure is checked.
func wellFormed(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("lensfun: %s: %w", path, err)
	}
	defer f.Close()
	d := xml.NewDecoder(f)
	d.CharsetReader = func(_ string, r io.Reader) (io.Reader, error) { return r, nil }
	for {
		_, err := d.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("lensfun: %s: %w: %v", path, ErrFormat, err)
		}
	}
}
