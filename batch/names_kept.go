package batch

import (
	"os"
	"path/filepath"

	"github.com/rawbatch/rawbatch/state"
)

// keptNames is what OUTDIR's records say of the names of a plan's
// outputs, so that names stay stable when inputs are added or removed:
// owner maps each recorded output (relative to OUTDIR, slash-separated,
// case-folded) to the input it was written from, held each input to its
// recorded outputs.
type keptNames struct {
	outDir string
	owner  map[string]string
	held   map[string]map[string]bool
	exists map[string]bool // inputs stat'ed
}

// keptNamesOf reads o.Recorded (nil when there are no records).
func keptNamesOf(o PlanOptions, outDir string) *keptNames {
	if o.Recorded == nil {
		return nil
	}
	recs := o.Recorded()
	if len(recs) == 0 {
		return nil
	}
	k := &keptNames{outDir: outDir, owner: map[string]string{}, held: map[string]map[string]bool{}, exists: map[string]bool{}}
	for out, in := range recs {
		key := foldPath(filepath.ToSlash(out))
		k.owner[key] = in
		if k.held[in] == nil {
			k.held[in] = map[string]bool{}
		}
		k.held[in][key] = true
	}
	return k
}

// key is the record key of an output path under outDir ("" outside it).
func (k *keptNames) key(path string) string {
	rel, err := filepath.Rel(k.outDir, path)
	if err != nil {
		return ""
	}
	return foldPath(filepath.ToSlash(rel))
}

// holds reports whether a record of input (absolute) holds path.
func (k *keptNames) holds(input, path string) bool {
	return k != nil && k.held[input][k.key(path)]
}

// hasAny reports whether input has any record.
func (k *keptNames) hasAny(input string) bool {
	return k != nil && len(k.held[input]) > 0
}

// otherOwns reports whether a record of another input than input, one
// that still exists, holds path: the name is that file's and is not given
// again. The name of an input that is gone (a moved card, a culled file)
// may be given again: the new-photo check (Runner.Relocate) then tells
// whether it is the same photograph.
func (k *keptNames) otherOwns(input, path string) bool {
	if k == nil {
		return false
	}
	in, ok := k.owner[k.key(path)]
	if !ok || in == input {
		return false
	}
	e, seen := k.exists[in]
	if !seen {
		_, err := os.Stat(in)
		e = err == nil
		k.exists[in] = e
	}
	return e
}

// inputOf is t's input as the records name it.
func inputOf(t Task) string { return state.AbsInput(t.Input) }
