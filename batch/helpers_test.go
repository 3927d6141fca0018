package batch

import (
	"os"
	"testing"
)

// testdata is the repository's testdata directory.
const testdata = "../testdata"

func mustRead(t testing.TB, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
