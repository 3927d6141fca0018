package pipeline

import (
	"os"
	"time"

	"github.com/rawbatch/rawbatch/pipeline/state"
)

// RewriteEnv names the environment variable of the test-only fault hook
// "rewrite=NAME" (FaultEnv): once the input NAME is decoded, the worker
// rewrites it in place (same inode) with the content of the file
// $RAWBATCH_TEST_REWRITE, keeping its modification time, as `cp -p` or
// `rsync -a --inplace` of another photograph of the same size would.
const RewriteEnv = "RAWBATCH_TEST_REWRITE"

// testHookDecoded, when set (the "rewrite" fault), runs once the input is
// decoded (after the demosaic stage), before the outputs are written.
var testHookDecoded func(in string)

// decodedHash hashes the input just before LibRaw opens it
// (state.HashFile: XXH3-64, "xxh3:<16 hex>"), so that the record keeps the
// hash of the bytes that were decoded rather than of whatever is there
// after the conversion; "" when it cannot be read (the open then says why).
func decodedHash(in string) string {
	h, _, _, err := state.HashFile(in)
	if err != nil {
		return ""
	}
	return h
}

// rewriteInPlace is the "rewrite" fault: it overwrites in with the bytes
// of $RAWBATCH_TEST_REWRITE and restores in's modification time.
func rewriteInPlace(in string) {
	src := os.Getenv(RewriteEnv)
	st, err := os.Stat(in)
	if src == "" || err != nil {
		return
	}
	b, err := os.ReadFile(src)
	if err != nil {
		return
	}
	if os.WriteFile(in, b, 0o644) == nil {
		os.Chtimes(in, time.Now(), st.ModTime())
	}
}
