package batch

import (
	"io/fs"
	"path/filepath"

	"github.com/rawbatch/rawbatch/pipeline"
)

// CleanStaleTemps removes, under outDir (its .rawbatch directory excepted),
// the temporary output files that no live rawbatch process holds: those
// left by killed runs, for any output, variant or settings. Only regular
// files whose name is one pipeline.CreateTemp makes and whose content
// is empty or starts like the format of that name's extension
// are removed (pipeline.RemoveStaleTemp); anything else is left alone. Temporary
// files being written by an overlapping run are kept. It returns how many
// files it removed and their total size in bytes; unreadable directories
// are skipped.
func CleanStaleTemps(outDir string) (removed int, bytes int64) {
	filepath.WalkDir(outDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if d != nil && d.IsDir() && p != outDir {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			if p != outDir && d.Name() == ".rawbatch" && filepath.Dir(p) == filepath.Clean(outDir) {
				return fs.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() {
			if n, ok := pipeline.RemoveStaleTemp(p); ok {
				removed++
				bytes += n
			}
		}
		return nil
	})
	return removed, bytes
}
