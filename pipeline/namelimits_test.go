package pipeline

import (
	"path/filepath"
	"strings"
	"testing"
)

// Output names and paths are checked against NAME_MAX and PATH_MAX, the
// temporary name included; the error names the limit.
func TestOutputNameError(t *testing.T) {
	dir := t.TempDir()
	if err := OutputNameError(filepath.Join(dir, "not", "made", "yet", strings.Repeat("a", 251)+".jpg")); err != nil {
		t.Errorf("255-byte name: %v", err)
	}
	if err := OutputNameError(filepath.Join(dir, strings.Repeat("a", 252)+".jpg")); err == nil || !strings.Contains(err.Error(), "256 bytes long, longer than the 255 bytes") {
		t.Errorf("256-byte name: %v", err)
	}
	deep := filepath.Join(dir, strings.Repeat(strings.Repeat("d", 200)+"/", 21), "x.jpg")
	if err := OutputNameError(deep); err == nil || !strings.Contains(err.Error(), "PATH_MAX") {
		t.Errorf("%d-byte path: %v", len(deep), err)
	}
}
