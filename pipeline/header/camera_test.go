package header

import "testing"

// TestCameraName: Make and Model as the raw has them, the make not
// repeated: NIKON CORPORATION / NIKON D70 is "NIKON D70" (not LibRaw's
// "Nikon D70"), Canon / Canon EOS 6D is "Canon EOS 6D" (not "Canon Canon
// EOS 6D").
func TestCameraName(t *testing.T) {
	for _, c := range []struct{ make, model, want string }{
		{"Canon", "Canon EOS 6D", "Canon EOS 6D"},
		{"NIKON CORPORATION", "NIKON D70", "NIKON D70"},
		{"PENTAX Corporation", "PENTAX K-5", "PENTAX K-5"},
		{"Leica Camera AG", "LEICA M10", "LEICA M10"},
		{"SONY", "ILCE-7M3", "SONY ILCE-7M3"},
		{"FUJIFILM", "X-T3", "FUJIFILM X-T3"},
		{"OLYMPUS IMAGING CORP.", "E-M5", "OLYMPUS IMAGING CORP. E-M5"},
		{"Canon", "CanonetQL17", "Canon CanonetQL17"},
		{"canon", "CANON EOS R6", "CANON EOS R6"},
		{"", "Test Camera", "Test Camera"},
		{" Kodak ", "", "Kodak"},
		{"", "", ""},
	} {
		if got := CameraName(c.make, c.model); got != c.want {
			t.Errorf("CameraName(%q, %q) = %q, want %q", c.make, c.model, got, c.want)
		}
	}
}
