package pipeline

import "github.com/rawbatch/rawbatch/internal/filehash"

// decodedHash hashes the input just before LibRaw opens it
// (filehash.File: XXH3-64, "xxh3:<16 hex>"), so that the record keeps the
// hash of the bytes that were decoded rather than of whatever is there
// after the conversion; "" when it cannot be read (the open then says why).
func decodedHash(in string) string {
	h, _, _, err := filehash.File(in, nil)
	if err != nil {
		return ""
	}
	return h
}
