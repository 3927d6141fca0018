package header

import (
	"strings"
	"unicode"
)

// CameraName returns a camera's name from its EXIF Make and Model as the
// raw has them: Model alone when it already starts with Make's first word
// (case-insensitively, as a whole word: "Canon" and "Canon EOS 6D" give
// "Canon EOS 6D", "NIKON CORPORATION" and "NIKON D70" give "NIKON D70"),
// else "Make Model" ("SONY ILCE-7M3", "FUJIFILM X-T3"); the one given when
// the other is empty; "" when both are. Names are never rewritten (not
// LibRaw's "Nikon D70" or "Canon Canon EOS 6D"). Inspect, the {camera}
// name field and the records' camera use it.
func CameraName(make, model string) string {
	make, model = strings.TrimSpace(make), strings.TrimSpace(model)
	switch {
	case make == "":
		return model
	case model == "":
		return make
	}
	word, _, _ := strings.Cut(make, " ")
	if len(model) >= len(word) && strings.EqualFold(model[:len(word)], word) {
		rest := []rune(model[len(word):])
		if len(rest) == 0 || !unicode.IsLetter(rest[0]) && !unicode.IsDigit(rest[0]) {
			return model
		}
	}
	return make + " " + model
}
