package cache

import (
	"bytes"
	"errors"
	"os"
	"testing"
)

// TestPutMetaRoundTrip: the metadata stored with PutMeta comes back from
// Get (also after Close of the entry), Put stores none, and a trailer
// changed on disk fails the payload checksum (the entry is corrupt).
func TestPutMetaRoundTrip(t *testing.T) {
	c := mustOpen(t, t.TempDir(), 0)
	pix := make([]float32, 4*3*3)
	for i := range pix {
		pix[i] = float32(i)
	}
	key, plain := Key("meta"), Key("plain")
	meta := []byte(`{"Source":"preview","Multipliers":[1.2,1,1.9]}`)
	if err := c.PutMeta(key, 4, 3, 3, pix, meta); err != nil {
		t.Fatal(err)
	}
	if err := c.Put(plain, 4, 3, 3, pix); err != nil {
		t.Fatal(err)
	}
	e, err := c.Get(key)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(e.Meta, meta) {
		t.Errorf("Meta = %q, want %q", e.Meta, meta)
	}
	if e2, err := c.Get(plain); err != nil || e2.Meta != nil {
		t.Errorf("Put's entry: Meta %q, err %v; want none", e2.Meta, err)
	} else {
	}
	if err := c.PutMeta(Key("big"), 4, 3, 3, pix, make([]byte, MaxMetaBytes+1)); err == nil {
		t.Error("PutMeta took metadata over MaxMetaBytes")
	}

	fresh := mustOpen(t, c.Dir(), 0) // not yet verified: Get checks the payload sum
	f, err := os.OpenFile(c.path(key), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte{'X'}, int64(headerSize+len(pix)*2+3)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := fresh.Get(key); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Get of an entry with a changed trailer: %v, want ErrCorrupt", err)
	}
}
