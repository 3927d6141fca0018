package batch

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/rawbatch/rawbatch/pipeline"

	"github.com/rawbatch/rawbatch/pipeline/header"
)

// PlanBatch walks inputs (directories recursively, in lexical order; files
// as given) and maps each candidate to its outputs under outDir: one per
// suffix, the first being Task.Output (suffixes are Variant.Suffix values:
// ".jpg", ".thumb.webp"). Directory entries are candidates when their
// extension is one of header.RawExtensions (case-insensitive); files named
// explicitly are always candidates. The output tree mirrors the input tree:
// a/b/IMG_1.CR3 under an input directory becomes outDir/a/b/IMG_1.jpg. When
// any output of one input would be an output of another (x.dng and x.DNG
// both give x.jpg; IMG_1.dng's thumb and IMG_1.thumb.CRW's main both give
// IMG_1.thumb.webp), each input involved is written as STEM.ORIGEXT plus
// its suffixes, then STEM.ORIGEXT-2, -3, ... when that is taken too
// (x.DNG.jpg, x.dng-2.jpg), and a warning says so. Output paths are compared
// case-folded (IMG.jpg and img.jpg collide), and colliding inputs are named
// in the order of Rel, then of their input root's absolute path, whatever
// the order of inputs. A file
// reached twice (the same device and inode) is planned once. outDir itself
// is not walked. AppleDouble files (IsAppleDouble) and system folders
// (IsSystemDir) found in a walk are skipped.
func PlanBatch(inputs []string, outDir string, suffixes ...string) (*Plan, error) {
	return PlanBatchWith(PlanOptions{}, inputs, outDir, suffixes...)
}

// PlanOptions are the choices of PlanBatchWith beyond PlanBatch's.
type PlanOptions struct {
	// Include and Exclude are globs (MatchGlob) matched against each
	// walked file's path relative to its input root and its base name: with
	// Include, a file is taken only when one matches; a file or folder an
	// Exclude matches is skipped. Files named as inputs are always taken.
	Include, Exclude []string
	// Files are listed input files (--files-from), planned after inputs:
	// each is taken like a file found in a walk (RAW extensions only,
	// Include and Exclude applied to its path relative to Base), but as
	// named: an AppleDouble name or a system folder on its way does not
	// skip it (only walks skip those), only AppleDouble content does,
	// with a warning naming it (Plan.SkippedListed); a listed directory is passed
	// over. Its Rel, and so its place under outDir, is its path relative to
	// Base; a file outside Base fails, naming it. Without Base each file
	// goes to outDir/BASENAME, as a file named as an input.
	Files []string
	Base  string
	// Name, when set, names the outputs (a --name template, see
	// NameTemplate); nil names them OUTDIR/dir(Rel)/STEM. A template that
	// needs header fields gives provisional names until ResolveNames.
	Name *NameTemplate
	// Recorded, when set, returns OUTDIR's recorded outputs (relative to
	// OUTDIR) and the absolute inputs they were written from
	// (state.Store.Outputs); it is called at most once per naming, and only
	// for inputs that collide or a template with {seq}: an input keeps the
	// name its record holds, and names recorded for other inputs are not
	// given again.
	Recorded func() map[string]string
}

// PlanBatchWith is PlanBatch with the choices o.
func PlanBatchWith(o PlanOptions, inputs []string, outDir string, suffixes ...string) (*Plan, error) {
	filter := walkFilter{include: o.Include, exclude: o.Exclude}
	for _, g := range append(slices.Clone(o.Include), o.Exclude...) {
		if err := CheckGlob(g); err != nil {
			return nil, err
		}
	}
	if len(suffixes) == 0 {
		return nil, errors.New("PlanBatch: no output suffix")
	}
	p := &Plan{}
	absOut, err := filepath.Abs(outDir)
	if err != nil {
		return nil, err
	}
	if r, err := filepath.EvalSymlinks(absOut); err == nil {
		absOut = r // walked paths are resolved too
	}
	problem := func(path string, err error) {
		p.Problems = append(p.Problems, FileResult{Task: Task{Input: path}, Status: StatusFailed,
			Err: fmt.Errorf("%s: %w", path, pipeline.PathReason(path, err))})
	}
	// seen maps a file's device and inode to its task, so a file reached
	// twice is planned once; a path that is not a symbolic link wins over
	// one that is.
	seen := map[[2]uint64]int{}
	add := func(path, rel string, fi fs.FileInfo) {
		task := Task{Input: path, Rel: rel, Size: fi.Size(), ModTime: fi.ModTime()}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			p.Tasks = append(p.Tasks, task)
			return
		}
		k := [2]uint64{uint64(st.Dev), st.Ino}
		i, dup := seen[k]
		if !dup {
			seen[k] = len(p.Tasks)
			p.Tasks = append(p.Tasks, task)
			return
		}
		kept := p.Tasks[i].Input
		if pipeline.IsSymlink(kept) && !pipeline.IsSymlink(path) {
			p.Tasks[i] = task
			kept, path = path, kept
		}
		if kept != path {
			p.Warnings = append(p.Warnings, fmt.Sprintf("%s and %s are the same file; converting it once, as %s", kept, path, kept))
		}
	}
	for _, in := range inputs {
		fi, err := os.Stat(in)
		if err != nil {
			problem(in, err)
			continue
		}
		if !fi.IsDir() {
			if !fi.Mode().IsRegular() {
				problem(in, header.ErrNotRegular)
				continue
			}
			add(in, filepath.Base(in), fi)
			continue
		}
		// A directory named on the command line is walked even when it is
		// a symbolic link; links to directories inside it are not followed.
		root, err := filepath.EvalSymlinks(in)
		if err != nil {
			problem(in, err)
			continue
		}
		err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			rel, rerr := filepath.Rel(root, path)
			if rerr != nil {
				rel = filepath.Base(path)
			}
			shown := filepath.Join(in, rel) // the path as the user named it
			if err != nil && d != nil && d.IsDir() && path != root && filter.skipDir(rel, d.Name()) {
				return fs.SkipDir
			}
			if err != nil {
				problem(shown, err)
				if d != nil && d.IsDir() {
					return fs.SkipDir
				}
				return nil
			}
			if d.IsDir() {
				if path == root {
					return nil
				}
				if a, err := filepath.Abs(path); err == nil && a == absOut {
					return fs.SkipDir
				}
				if filter.skipDir(rel, d.Name()) {
					if !IsSystemDir(d.Name()) {
						p.ExcludedDirs++
					}
					return fs.SkipDir
				}
				return nil
			}
			if !filter.takeFile(rel, d.Name()) {
				if (walkFilter{}).takeFile(rel, d.Name()) {
					p.Excluded++
				}
				return nil
			}
			fi, err := os.Stat(path) // follows a symlink to a file
			if errors.Is(err, syscall.ELOOP) {
				p.Warnings = append(p.Warnings, fmt.Sprintf("%s: a loop of symbolic links; skipped", shown))
				return nil
			}
			if err != nil {
				problem(shown, err)
				return nil
			}
			if !fi.Mode().IsRegular() {
				problem(shown, header.ErrNotRegular)
				return nil
			}
			add(shown, rel, fi)
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	if len(o.Files) > 0 {
		rel := relToBase(o.Base)
		for _, f := range o.Files {
			f = filepath.Clean(f)
			fi, serr := os.Stat(f)
			if serr == nil && fi.IsDir() {
				continue // a listed directory (--base itself, as find lists it) is passed over
			}
			r, err := rel(f)
			if err != nil {
				problem(f, err)
				continue
			}
			if serr != nil {
				problem(f, serr)
				continue
			}
			if !filter.takeListed(r) {
				if (walkFilter{}).takeListed(r) {
					p.Excluded++
				}
				continue
			}
			if !fi.Mode().IsRegular() {
				problem(f, header.ErrNotRegular)
				continue
			}
			if IsAppleDouble(filepath.Base(f)) && isAppleDoubleFile(f) {
				// Named, but macOS metadata (find lists ._IMG_1.CR3 with
				// IMG_1.CR3): said, not failed.
				p.Warnings = append(p.Warnings, fmt.Sprintf("%s: an AppleDouble file (macOS metadata, not a photograph); skipped", f))
				p.SkippedListed++
				continue
			}
			add(f, r, fi)
		}
	}
	if o.Name != nil && o.Name.NeedsHeader() {
		// Provisional names, without the header's fields: ResolveNames
		// names the files once their headers are read.
		p.mapOutputs(o, outDir, suffixes)
		return p, nil
	}
	p.Warnings = append(p.Warnings, p.mapOutputs(o, outDir, suffixes)...)
	p.finishOutputs(outDir, seen)
	return p, nil
}

// finishOutputs fills Task.OutputRel and fails a task whose first output
// would overwrite an input (photo.jpg given as a RAW and converted into its
// own folder); inputs holds the device and inode of every input.
func (p *Plan) finishOutputs(outDir string, inputs map[[2]uint64]int) {
	for i := range p.Tasks {
		t := &p.Tasks[i]
		if rel, err := filepath.Rel(outDir, t.Output); err == nil {
			t.OutputRel = rel
		}
		for j := range t.Paths {
			if rel, err := filepath.Rel(outDir, t.Paths[j].Path); err == nil {
				t.Paths[j].Rel = rel
			}
		}
		if fi, err := os.Stat(t.Output); err == nil && t.Err == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				if _, in := inputs[[2]uint64{uint64(st.Dev), st.Ino}]; in {
					t.Err = fmt.Errorf("%s: its output %s would overwrite an input file; choose another output directory", t.Input, t.Output)
				}
			}
		}
	}
}

// OutputPath returns the path of t's output for the j-th suffix (the
// suffixes given to PlanBatch): Stem+suffix, or Paths[j] when a --name
// template with {variant} named each variant's file.
func (t Task) OutputPath(j int, suffix string) string {
	if j < len(t.Paths) {
		return t.Paths[j].Path
	}
	return t.Stem + suffix
}

// planned is one output path of a task before collisions are resolved:
// stem+tail, where a collision changes the stem.
type planned struct{ stem, tail string }

// plainNames returns the output paths of each task, one per suffix, before
// collisions: OUTDIR/dir(Rel)/STEM plus the suffix without a template;
// with o.Name, the expansion (under OUTDIR when it makes folders, else
// under the mirrored folder) plus the suffix, or plus the extension alone
// when it uses {variant}. A task whose expansion is not a valid path
// fails (Task.Err) and keeps the default name.
func (p *Plan) plainNames(o PlanOptions, outDir string, suffixes []string) [][]planned {
	names := make([][]planned, len(p.Tasks))
	var seq []int
	if o.Name != nil && o.Name.needsSeq {
		seq = p.seqNumbers(o, outDir, suffixes)
	}
	for i := range p.Tasks {
		t := &p.Tasks[i]
		stem := filepath.Join(outDir, strings.TrimSuffix(t.Rel, filepath.Ext(t.Rel)))
		names[i] = make([]planned, len(suffixes))
		for j, sfx := range suffixes {
			names[i][j] = planned{stem, sfx}
		}
		if o.Name == nil {
			continue
		}
		n := 0
		if seq != nil {
			n = seq[i]
		}
		named, err := p.templateNames(o, outDir, suffixes, i, n)
		if err != nil {
			if t.Err == nil {
				t.Err = fmt.Errorf("%s: --name %s: %w", t.Input, o.Name, err)
			}
			continue
		}
		names[i] = named
	}
	return names
}

// seqNumbers returns each task's {seq} number: the number the records
// show its output under (a number is given once), and for the others the
// next numbers that no task keeps and no record holds for another input,
// in the stable order (collisionOrder). Without records: 1, 2, ... in that
// order.
func (p *Plan) seqNumbers(o PlanOptions, outDir string, suffixes []string) []int {
	idx := make([]int, len(p.Tasks))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, collisionOrder(p.Tasks))
	seq := make([]int, len(p.Tasks))
	k := keptNamesOf(o, outDir)
	first := func(i, n int) string { // the first output's path with number n
		ns, err := p.templateNames(o, outDir, suffixes[:1], i, n)
		if err != nil {
			return ""
		}
		return ns[0].stem + ns[0].tail
	}
	taken := map[int]bool{}
	if k != nil {
		limit := len(p.Tasks) + len(k.owner) + 1
		for pos, i := range idx {
			in := inputOf(p.Tasks[i])
			if !k.hasAny(in) {
				continue
			}
			if n := pos + 1; !taken[n] && k.holds(in, first(i, n)) { // its place in the order: most often
				seq[i], taken[n] = n, true
				continue
			}
			for n := 1; n <= limit; n++ {
				if !taken[n] && k.holds(in, first(i, n)) {
					seq[i], taken[n] = n, true
					break
				}
			}
		}
	}
	next := 1
	for _, i := range idx {
		if seq[i] != 0 {
			continue
		}
		in := ""
		if k != nil {
			in = inputOf(p.Tasks[i])
		}
		for taken[next] || k.otherOwns(in, first(i, next)) {
			next++
		}
		seq[i], taken[next] = next, true
		next++
	}
	return seq
}

// templateNames returns the outputs of task i by o.Name, one per suffix,
// with the number seq for {seq}.
func (p *Plan) templateNames(o PlanOptions, outDir string, suffixes []string, i, seq int) ([]planned, error) {
	t := &p.Tasks[i]
	f := NameFields{Stem: strings.TrimSuffix(filepath.Base(t.Rel), filepath.Ext(t.Rel)),
		Ext: strings.TrimPrefix(filepath.Ext(t.Rel), "."), Dir: filepath.Dir(t.Rel), Seq: seq}
	if h := t.Info.Header; h != nil {
		f.Camera, f.Date = header.CameraName(h.EXIF.Make, h.EXIF.Model), h.EXIF.DateTime
	}
	if f.Camera == "" {
		f.Camera = header.CameraName(t.Info.Make, t.Info.Model)
	}
	base := filepath.Join(outDir, filepath.Dir(t.Rel))
	if o.Name.rooted {
		base = outDir
	}
	named := make([]planned, len(suffixes))
	for j, sfx := range suffixes {
		variant, ext := variantOfSuffix(sfx)
		f.Variant = variant
		e, err := o.Name.Expand(f)
		if err != nil {
			return nil, err
		}
		named[j] = planned{filepath.Join(base, filepath.FromSlash(e)), sfx}
		if o.Name.hasVariant {
			named[j].tail = ext
		}
	}
	return named, nil
}

// variantOfSuffix splits a Variant.Suffix into the variant's name and its
// extension: ".jpg" is main's, ".thumb.webp" thumb's (variant names have
// no dots).
func variantOfSuffix(sfx string) (name, ext string) {
	ext = filepath.Ext(sfx)
	if name = strings.TrimPrefix(strings.TrimSuffix(sfx, ext), "."); name == "" {
		name = "main"
	}
	return name, ext
}

// mapOutputs fills Task.Output, Task.Stem and (for a --name template with
// {variant}) Task.Paths, resolving collisions between the outputs (one per
// suffix) of different inputs, and returns the warnings about them. Output
// paths are compared case-folded (foldPath): IMG.jpg and img.jpg are one
// file on exFAT, SMB and macOS volumes. Colliding inputs are named in a
// stable order (collisionOrder), not in argument order, so every run over
// the same files gives each the same name: STEM.ORIGEXT, then -2, -3, ...
// without a template; the expansion with -1, -2, ... with one.
func (p *Plan) mapOutputs(o PlanOptions, outDir string, suffixes []string) []string {
	p.Collisions = map[string][]string{}
	plain := p.plainNames(o, outDir, suffixes)
	// owners maps each planned output path, case-folded, to the tasks that
	// would write it; shown is the path as first planned, for messages.
	owners := map[string][]int{}
	shown := map[string]string{}
	for i := range p.Tasks {
		for _, n := range plain[i] {
			path := n.stem + n.tail
			k := foldPath(path)
			if o := owners[k]; len(o) == 0 || o[len(o)-1] != i {
				owners[k] = append(o, i)
			}
			if _, ok := shown[k]; !ok {
				shown[k] = path
			}
		}
	}
	clash := make([]bool, len(p.Tasks))
	used := map[string]bool{}
	for k, o := range owners {
		if len(o) > 1 {
			for _, i := range o {
				clash[i] = true
			}
			continue
		}
		used[k] = true
	}
	final := make([][]planned, len(p.Tasks))
	var clashing []int
	for i := range p.Tasks {
		if !clash[i] {
			final[i] = plain[i]
			continue
		}
		clashing = append(clashing, i)
	}
	// Rename clashing inputs in the stable order, so the names are the
	// same on every run.
	var order func(a, b int) int
	if len(clashing) > 0 {
		order = collisionOrder(p.Tasks)
	}
	slices.SortStableFunc(clashing, func(a, b int) int { return order(a, b) })
	// The records are read whenever there are any: a file that does not
	// clash now may hold a collision name from an earlier run.
	k := keptNamesOf(o, outDir)
	free := func(ns []planned) bool {
		for _, n := range ns {
			if used[foldPath(n.stem+n.tail)] {
				return false
			}
		}
		return true
	}
	renamed := func(ns []planned, f func(stem string) string) []planned {
		out := make([]planned, len(ns))
		for j, n := range ns {
			out[j] = planned{f(n.stem), n.tail}
		}
		return out
	}
	// candidate is the n-th name of clashing task i: its plain name (0),
	// then STEM.ORIGEXT, STEM.ORIGEXT-2, ... without a template, the
	// expansion with -1, -2, ... with one.
	candidate := func(i, n int) []planned {
		t := p.Tasks[i]
		switch {
		case n == 0:
			return plain[i]
		case o.Name != nil:
			return renamed(plain[i], func(stem string) string { return fmt.Sprintf("%s-%d", stem, n) })
		case n == 1:
			return renamed(plain[i], func(string) string { return filepath.Join(outDir, t.Rel) })
		}
		return renamed(plain[i], func(string) string { return filepath.Join(outDir, fmt.Sprintf("%s-%d", t.Rel, n)) })
	}
	// A file that does not clash in this run but whose record holds one of
	// its collision names (an earlier run had another input of its name:
	// two cards converted together, then one of them alone) keeps that name
	// rather than writing a second export of the same photograph under its
	// plain name.
	if k != nil {
		limit := len(k.owner) + 1
		for i := range p.Tasks {
			in := inputOf(p.Tasks[i])
			if clash[i] || !k.hasAny(in) || k.holds(in, plain[i][0].stem+plain[i][0].tail) {
				continue
			}
			for _, n := range plain[i] {
				delete(used, foldPath(n.stem+n.tail))
			}
			for n := 1; n <= limit; n++ {
				if ns := candidate(i, n); free(ns) && k.holds(in, ns[0].stem+ns[0].tail) {
					final[i] = ns
					break
				}
			}
			for _, n := range final[i] {
				used[foldPath(n.stem+n.tail)] = true
			}
		}
	}
	// An input whose record holds one of its names keeps it (names stay
	// the same when inputs are added or removed).
	if k != nil && len(clashing) > 0 {
		limit := len(clashing) + len(k.owner) + 1
		var rest []int
		for _, i := range clashing {
			in := inputOf(p.Tasks[i])
			kept := false
			for n := 0; n <= limit && k.hasAny(in); n++ {
				if ns := candidate(i, n); free(ns) && k.holds(in, ns[0].stem+ns[0].tail) {
					for _, n := range ns {
						used[foldPath(n.stem+n.tail)] = true
					}
					final[i], kept = ns, true
					break
				}
			}
			if !kept {
				rest = append(rest, i)
			}
		}
		clashing = rest
	}
	// The others get the free names in the stable order: not another
	// task's, nor held by a record of another input that still exists.
	for _, i := range clashing {
		in := ""
		if k != nil {
			in = inputOf(p.Tasks[i])
		}
		ns := candidate(i, 1)
		for n := 2; !free(ns) || k.otherOwns(in, ns[0].stem+ns[0].tail); n++ {
			ns = candidate(i, n)
		}
		for _, n := range ns {
			used[foldPath(n.stem+n.tail)] = true
		}
		final[i] = ns
	}
	for i := range p.Tasks {
		t := &p.Tasks[i]
		t.Stem = final[i][0].stem
		t.Output = final[i][0].stem + final[i][0].tail
		t.Paths = nil
		if o.Name != nil && o.Name.hasVariant {
			for _, n := range final[i] {
				t.Paths = append(t.Paths, Output{Path: n.stem + n.tail})
			}
		}
	}
	// One warning per set of inputs that clash, naming the first output
	// they share and every input's new name, in the stable order.
	var keys []string
	for k, o := range owners {
		if len(o) > 1 {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b string) int { return strings.Compare(shown[a], shown[b]) })
	warned := map[string]bool{}
	var warnings []string
	for _, k := range keys {
		o := slices.Clone(owners[k])
		slices.SortStableFunc(o, func(a, b int) int { return order(a, b) })
		set := fmt.Sprint(o)
		if warned[set] {
			continue
		}
		warned[set] = true
		var names []string
		for _, i := range o {
			names = append(names, fmt.Sprintf("%s → %s", p.Tasks[i].Input, p.Tasks[i].Output))
		}
		msg := fmt.Sprintf("%d inputs map to %s; writing them as %s", len(o), shown[k], strings.Join(names, ", "))
		warnings = append(warnings, msg)
		for _, i := range o {
			p.Collisions[msg] = append(p.Collisions[msg], p.Tasks[i].Input)
		}
	}
	return warnings
}

// foldPath is the key under which two output paths are one file on a
// case-insensitive file system (exFAT, FAT32, SMB shares, macOS's APFS and
// HFS+ by default): the path in Unicode lower case after upper case, which
// folds the cases that ToLower alone leaves apart (ſ, K).
func foldPath(path string) string {
	return strings.ToLower(strings.ToUpper(path))
}

// collisionOrder returns a comparison of tasks by their path relative to
// their input root, then by the root's absolute path: an order that does
// not depend on the order of the arguments, so colliding inputs get the
// same names on every run (c1/x.dng before c2/x.dng, whichever is named
// first).
func collisionOrder(tasks []Task) func(a, b int) int {
	roots := make([]string, len(tasks))
	for i, t := range tasks {
		root := strings.TrimSuffix(t.Input, t.Rel)
		if abs, err := filepath.Abs(root); err == nil {
			root = abs
		}
		roots[i] = root
	}
	return func(a, b int) int {
		if c := strings.Compare(tasks[a].Rel, tasks[b].Rel); c != 0 {
			return c
		}
		return strings.Compare(roots[a], roots[b])
	}
}

// relToBase returns the function giving a listed file's path relative to
// base (PlanOptions.Files): compared as written, then with symbolic links
// resolved (/card as a link to /media/card); an error for a file outside
// base. With base "", a file's base name.
func relToBase(base string) func(path string) (string, error) {
	if base == "" {
		return func(path string) (string, error) { return filepath.Base(path), nil }
	}
	absBase, err := filepath.Abs(base)
	if err != nil {
		absBase = base
	}
	resolved, err := filepath.EvalSymlinks(absBase)
	if err != nil {
		resolved = absBase
	}
	inside := func(root, path string) (string, bool) {
		r, err := filepath.Rel(root, path)
		if err != nil || r == "." || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
			return "", false
		}
		return r, true
	}
	return func(path string) (string, error) {
		abs, err := filepath.Abs(path)
		if err != nil {
			return "", err
		}
		if r, ok := inside(absBase, abs); ok {
			return r, nil
		}
		if dir, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
			if r, ok := inside(resolved, filepath.Join(dir, filepath.Base(abs))); ok {
				return r, nil
			}
		}
		return "", fmt.Errorf("outside --base %s: list only files under it, or give another --base", base)
	}
}
