package demosaic

import "sync"

// tiles holds the tile planes of goroutines done with them, for the next
// band, conversion or file (RCD and Bands take theirs from it). The first
// keptTiles given back stay referenced: a process converting small files
// one after another (a worker) demosaics each in planes it already has,
// where fresh ones cost their clearing and a page fault per 4 KiB (a tile
// is TileBytes; a 64×48 image is one tile; 2.2 MB), and the collector and the
// runtime's scavenger would take back the planes of a pool between files.
// The others go to a sync.Pool, as many as run at once.
var tiles = tilePool{pool: syncPoolOfTiles()}

// syncPoolOfTiles is a sync.Pool that makes new tiles.
func syncPoolOfTiles() sync.Pool { return sync.Pool{New: func() any { return newRCDTile() }} }

// keptTiles is how many tiles tiles keeps referenced: a small file's
// demosaic on one or two goroutines finds its own (more would stay in a
// worker's memory after a large file on many threads).
const keptTiles = 2

// tilePool is tiles' type: sync.Pool's Get and Put, keeping keptTiles.
type tilePool struct {
	mu   sync.Mutex
	kept []*rcdTile
	pool sync.Pool
}

// Get returns a tile (*rcdTile): a kept one, else the pool's.
func (p *tilePool) Get() any {
	p.mu.Lock()
	if n := len(p.kept); n > 0 {
		t := p.kept[n-1]
		p.kept = p.kept[:n-1]
		p.mu.Unlock()
		return t
	}
	p.mu.Unlock()
	return p.pool.Get()
}

// Put gives back tile x (*rcdTile), no longer used by its goroutine.
func (p *tilePool) Put(x any) {
	t := x.(*rcdTile)
	p.mu.Lock()
	if len(p.kept) < keptTiles {
		p.kept = append(p.kept, t)
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	p.pool.Put(t)
}
