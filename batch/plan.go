package batch

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/rawbatch/rawbatch/internal/fault"
	"github.com/rawbatch/rawbatch/pipeline"
	"github.com/rawbatch/rawbatch/pipeline/header"
	"github.com/rawbatch/rawbatch/pipeline/sidecar"
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
	// each is filtered like a file found in a walk by Include and Exclude
	// (applied to its path relative to Base), but taken as named, like a
	// file argument: whatever its extension (one that is not a RAW file
	// fails saying so, one that is not a regular file fails as
	// header.ErrNotRegular), and an AppleDouble name or a system folder
	// on its way does not skip it (only walks skip those), only
	// AppleDouble content does, with a warning naming it
	// (Plan.SkippedListed); a listed directory is passed over. Its Rel, and so its place under outDir, is its path relative to
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
	// Ctx, when set, stops the walk once it is done (a signal): the plan
	// then holds the files found so far, and the run starts none of them.
	Ctx context.Context
	// Rating filters the files by their XMP sidecar's rating and label.
	Rating RatingFilter
	// NoSidecar leaves sidecars unread (--sidecar off): Task.XMP stays
	// empty and Rating must be the zero value.
	NoSidecar bool
}

// RatingFilter takes files by what their XMP says (the packet inside a
// DNG, the sidecar's fields over it: readXMP).
// The zero value takes every file.
type RatingFilter struct {
	// MinRating, when HasMin, takes only files rated at least MinRating
	// (an unrated file counts as 0, a rejected one as -1).
	MinRating int
	HasMin    bool
	// Labels, when set, takes only files whose xmp:Label is one of them
	// (case-insensitive).
	Labels []string
	// SkipRejected leaves out the files rated -1 (rejected) or flagged
	// rejected (sidecar.Meta.Rejected).
	SkipRejected bool
}

// Skips returns why f leaves out a file whose sidecar says m ("rating
// 2, below --min-rating 3"), "" when it takes it.
func (f RatingFilter) Skips(m sidecar.Meta) string {
	r := 0
	if m.Rating != "" {
		r, _ = strconv.Atoi(m.Rating)
	}
	shown := m.Rating
	if shown == "" {
		shown = "none"
	}
	switch {
	case f.SkipRejected && r == -1:
		return "rejected; --skip-rejected"
	case f.SkipRejected && m.Rejected():
		return "rejected by its pick flag; --skip-rejected"
	case f.HasMin && r < f.MinRating:
		return fmt.Sprintf("rating %s, below --min-rating %d", shown, f.MinRating)
	}
	if len(f.Labels) > 0 {
		for _, l := range f.Labels {
			if strings.EqualFold(l, m.Label) {
				return ""
			}
		}
		if m.Label == "" {
			return "no label; --label " + strings.Join(f.Labels, ",")
		}
		return fmt.Sprintf("label %s; --label %s", m.Label, strings.Join(f.Labels, ","))
	}
	return ""
}

// PlanBatchWith is PlanBatch with the choices o.
func PlanBatchWith(o PlanOptions, inputs []string, outDir string, suffixes ...string) (*Plan, error) {
	for _, g := range append(slices.Clone(o.Include), o.Exclude...) {
		if err := CheckGlob(g); err != nil {
			return nil, err
		}
	}
	if len(suffixes) == 0 {
		return nil, errors.New("PlanBatch: no output suffix")
	}
	absOut, err := filepath.Abs(outDir)
	if err != nil {
		return nil, err
	}
	if r, err := filepath.EvalSymlinks(absOut); err == nil {
		absOut = r // walked paths are resolved too
	}
	pl := &planner{p: &Plan{}, filter: walkFilter{include: o.Include, exclude: o.Exclude}, absOut: absOut, seen: map[[2]uint64]int{}, ctx: o.Ctx, rating: o.Rating, noSidecar: o.NoSidecar}
	for _, in := range inputs {
		if pl.stopped() {
			break
		}
		if err := pl.input(in); err != nil {
			return nil, err
		}
	}
	if len(o.Files) > 0 {
		pl.listed(o.Files, o.Base)
	}
	p := pl.p
	if o.Name != nil && o.Name.NeedsHeader() {
		// Provisional names, without the header's fields: ResolveNames
		// names the files once their headers are read.
		p.mapOutputs(o, outDir, suffixes)
		return p, nil
	}
	p.Warnings = append(p.Warnings, p.mapOutputs(o, outDir, suffixes)...)
	p.finishOutputs(outDir, pl.seen)
	return p, nil
}

// planner gathers the tasks of PlanBatchWith: the plan so far, the walk's
// filter, OUTDIR's absolute resolved path (not walked), and each file's
// device and inode mapped to its task, so that a file reached twice is
// planned once.
type planner struct {
	p         *Plan
	filter    walkFilter
	absOut    string
	seen      map[[2]uint64]int
	ctx       context.Context // PlanOptions.Ctx
	rating    RatingFilter    // PlanOptions.Rating
	noSidecar bool            // PlanOptions.NoSidecar
}

// stopped reports whether the planning was stopped (PlanOptions.Ctx).
func (pl *planner) stopped() bool { return pl.ctx != nil && pl.ctx.Err() != nil }

// problem records an input that cannot be read at all.
func (pl *planner) problem(path string, err error) {
	pl.p.Problems = append(pl.p.Problems, FileResult{Task: Task{Input: path}, Status: StatusFailed,
		Err: fmt.Errorf("%s: %w", path, pipeline.PathReason(path, err))})
}

// add plans the file at path (rel to its input root) once: a file reached
// again keeps one task, a path that is not a symbolic link winning over
// one that is, with a warning naming both.
func (pl *planner) add(path, rel string, fi fs.FileInfo) {
	defer fault.At(fault.Planned, path)
	p := pl.p
	task := Task{Input: path, Rel: rel, Size: fi.Size(), ModTime: fi.ModTime()}
	var warns []string
	if !pl.noSidecar {
		task.XMP, warns = readXMP(path) // sidecar.go
	}
	if why := pl.rating.Skips(task.XMP); why != "" {
		// A file left out is never converted, so its sidecar's warnings
		// (malformed, two of them) are said here, with why it was left out.
		for _, w := range warns {
			why += "; " + strings.TrimSuffix(strings.TrimPrefix(w, path+": "), "; converting without it")
		}
		p.Filtered = append(p.Filtered, FileResult{Task: task, Status: StatusSkipped, Reason: why})
		return
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		p.Tasks = append(p.Tasks, task)
		return
	}
	k := [2]uint64{uint64(st.Dev), st.Ino}
	i, dup := pl.seen[k]
	if !dup {
		pl.seen[k] = len(p.Tasks)
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

// input plans one input argument: a file as given, a directory walked.
// Errors: the walk failed (an input that cannot be read is a Problem).
func (pl *planner) input(in string) error {
	fi, err := os.Stat(in)
	if err != nil {
		pl.problem(in, err)
		return nil
	}
	if !fi.IsDir() {
		if !fi.Mode().IsRegular() {
			pl.problem(in, header.ErrNotRegular)
			return nil
		}
		pl.add(in, filepath.Base(in), fi)
		return nil
	}
	// A directory named on the command line is walked even when it is
	// a symbolic link; links to directories inside it are not followed.
	root, err := filepath.EvalSymlinks(in)
	if err != nil {
		pl.problem(in, err)
		return nil
	}
	linked := pl.p.LinkedDirs
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		return pl.visit(in, root, path, d, err)
	})
	if n := pl.p.LinkedDirs - linked; n > 0 {
		what := "1 symbolic link to a folder"
		if n > 1 {
			what = fmt.Sprintf("%d symbolic links to folders", n)
		}
		pl.p.Warnings = append(pl.p.Warnings, fmt.Sprintf("%s: %s not followed (name a folder on the command line to convert it)", in, what))
	}
	return err
}

// visit is the WalkDir function of input argument in (resolved to root):
// it skips OUTDIR, excluded and system folders and files the filter
// leaves out (counting them), and plans the regular files found (through
// symbolic links to files), naming each as the user named its root.
func (pl *planner) visit(in, root, path string, d fs.DirEntry, err error) error {
	if pl.stopped() {
		return fs.SkipAll
	}
	p, filter := pl.p, pl.filter
	rel, rerr := filepath.Rel(root, path)
	if rerr != nil {
		rel = filepath.Base(path)
	}
	shown := filepath.Join(in, rel) // the path as the user named it
	if err != nil && d != nil && d.IsDir() && path != root && filter.skipDir(rel, d.Name()) {
		return fs.SkipDir
	}
	if err != nil {
		pl.problem(shown, err)
		if d != nil && d.IsDir() {
			return fs.SkipDir
		}
		return nil
	}
	if d.IsDir() {
		if path == root {
			return nil
		}
		if a, err := filepath.Abs(path); err == nil && a == pl.absOut {
			p.SkippedOutDir = true
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
	if d.Type()&fs.ModeSymlink != 0 {
		if fi, err := os.Stat(path); err == nil && fi.IsDir() {
			p.LinkedDirs++ // inside a walked folder, links to folders are not followed
			return nil
		}
	}
	if !filter.takeFile(rel, d.Name()) {
		if (walkFilter{}).takeFile(rel, d.Name()) {
			p.Excluded++
		} else if d.Type().IsRegular() {
			p.Others++
			if ext := strings.ToLower(filepath.Ext(d.Name())); ext != "" && len(p.OtherExts) < 5 && !slices.Contains(p.OtherExts, ext) {
				p.OtherExts = append(p.OtherExts, ext)
			}
		}
		return nil
	}
	fi, err := os.Stat(path) // follows a symlink to a file
	if errors.Is(err, syscall.ELOOP) {
		p.Warnings = append(p.Warnings, fmt.Sprintf("%s: a loop of symbolic links; skipped", shown))
		return nil
	}
	if err != nil {
		pl.problem(shown, err)
		return nil
	}
	if !fi.Mode().IsRegular() {
		pl.problem(shown, header.ErrNotRegular)
		return nil
	}
	pl.add(shown, rel, fi)
	return nil
}

// listed plans the listed files (PlanOptions.Files) relative to base.
func (pl *planner) listed(files []string, base string) {
	p, filter := pl.p, pl.filter
	rel := relToBase(base)
	for _, f := range files {
		if pl.stopped() {
			return
		}
		f = filepath.Clean(f)
		fi, serr := os.Stat(f)
		if serr == nil && fi.IsDir() {
			continue // a listed directory (--base itself, as find lists it) is passed over
		}
		r, err := rel(f)
		if err != nil {
			pl.problem(f, err)
			continue
		}
		if serr != nil {
			pl.problem(f, serr)
			continue
		}
		if !filter.takeListed(r) {
			p.Excluded++
			continue
		}
		if !fi.Mode().IsRegular() {
			pl.problem(f, header.ErrNotRegular)
			continue
		}
		if IsAppleDouble(filepath.Base(f)) && isAppleDoubleFile(f) {
			// Named, but macOS metadata (find lists ._IMG_1.CR3 with
			// IMG_1.CR3): said, not failed.
			p.Warnings = append(p.Warnings, fmt.Sprintf("%s: an AppleDouble file (macOS metadata, not a photograph); skipped", f))
			p.SkippedListed++
			continue
		}
		pl.add(f, r, fi)
	}
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
	n := p.newNaming(o, outDir, suffixes)
	clashing := n.clashing()
	// The records are read whenever there are any: a file that does not
	// clash now may hold a collision name from an earlier run.
	n.kept = keptNamesOf(o, outDir)
	n.keepRecordedUnclashed()
	clashing = n.keepRecorded(clashing)
	n.nameRest(clashing)
	n.apply()
	return n.warnings()
}

// naming is the state of one mapOutputs: each task's plain names (before
// collisions) and final ones, the tasks planning each output path
// (case-folded), the paths taken, the records' kept names, and the stable
// order of colliding inputs.
type naming struct {
	p      *Plan
	o      PlanOptions
	outDir string
	plain  [][]planned
	final  [][]planned
	// owners maps each planned output path, case-folded, to the tasks that
	// would write it; shown is the path as first planned, for messages.
	owners map[string][]int
	shown  map[string]string
	clash  []bool          // the task shares an output path with another
	used   map[string]bool // output paths taken, case-folded
	kept   *keptNames      // nil: no records
	order  func(a, b int) int
}

// newNaming plans every task's plain names and finds which ones clash:
// the paths planned by one task alone are taken, and those tasks keep
// their plain names (for now).
func (p *Plan) newNaming(o PlanOptions, outDir string, suffixes []string) *naming {
	n := &naming{p: p, o: o, outDir: outDir, plain: p.plainNames(o, outDir, suffixes),
		owners: map[string][]int{}, shown: map[string]string{}, clash: make([]bool, len(p.Tasks)),
		used: map[string]bool{}, final: make([][]planned, len(p.Tasks))}
	for i := range p.Tasks {
		for _, pl := range n.plain[i] {
			path := pl.stem + pl.tail
			k := foldPath(path)
			if ow := n.owners[k]; len(ow) == 0 || ow[len(ow)-1] != i {
				n.owners[k] = append(ow, i)
			}
			if _, ok := n.shown[k]; !ok {
				n.shown[k] = path
			}
		}
	}
	for k, ow := range n.owners {
		if len(ow) > 1 {
			for _, i := range ow {
				n.clash[i] = true
			}
			continue
		}
		n.used[k] = true
	}
	for i := range p.Tasks {
		if !n.clash[i] {
			n.final[i] = n.plain[i]
		}
	}
	return n
}

// clashing returns the clashing tasks in the stable order (collisionOrder),
// so the names are the same on every run.
func (n *naming) clashing() []int {
	var clashing []int
	for i := range n.p.Tasks {
		if n.clash[i] {
			clashing = append(clashing, i)
		}
	}
	if len(clashing) > 0 {
		n.order = collisionOrder(n.p.Tasks)
		slices.SortStableFunc(clashing, func(a, b int) int { return n.order(a, b) })
	}
	return clashing
}

// free reports whether none of ns is taken.
func (n *naming) free(ns []planned) bool {
	for _, pl := range ns {
		if n.used[foldPath(pl.stem+pl.tail)] {
			return false
		}
	}
	return true
}

// take marks ns as task i's names, taken.
func (n *naming) take(i int, ns []planned) {
	for _, pl := range ns {
		n.used[foldPath(pl.stem+pl.tail)] = true
	}
	n.final[i] = ns
}

// candidate is the c-th name of clashing task i: its plain name (0), then
// STEM.ORIGEXT, STEM.ORIGEXT-2, ... without a template, the expansion
// with -1, -2, ... with one.
func (n *naming) candidate(i, c int) []planned {
	t := n.p.Tasks[i]
	var stem func(string) string
	switch {
	case c == 0:
		return n.plain[i]
	case n.o.Name != nil:
		stem = func(s string) string { return fmt.Sprintf("%s-%d", s, c) }
	case c == 1:
		stem = func(string) string { return filepath.Join(n.outDir, t.Rel) }
	default:
		stem = func(string) string { return filepath.Join(n.outDir, fmt.Sprintf("%s-%d", t.Rel, c)) }
	}
	out := make([]planned, len(n.plain[i]))
	for j, pl := range n.plain[i] {
		out[j] = planned{stem(pl.stem), pl.tail}
	}
	return out
}

// keepRecordedUnclashed: a file that does not clash in this run but whose
// record holds one of its collision names (an earlier run had another
// input of its name: two cards converted together, then one of them
// alone) keeps that name rather than writing a second export of the same
// photograph under its plain name.
func (n *naming) keepRecordedUnclashed() {
	k := n.kept
	if k == nil {
		return
	}
	limit := len(k.owner) + 1
	for i := range n.p.Tasks {
		in := inputOf(n.p.Tasks[i])
		if n.clash[i] || !k.hasAny(in) || k.holds(in, n.plain[i][0].stem+n.plain[i][0].tail) {
			continue
		}
		for _, pl := range n.plain[i] {
			delete(n.used, foldPath(pl.stem+pl.tail))
		}
		for c := 1; c <= limit; c++ {
			if ns := n.candidate(i, c); n.free(ns) && k.holds(in, ns[0].stem+ns[0].tail) {
				n.final[i] = ns
				break
			}
		}
		n.take(i, n.final[i])
	}
}

// keepRecorded gives each clashing input whose record holds one of its
// names that name (names stay the same when inputs are added or removed),
// and returns the clashing inputs left to name.
func (n *naming) keepRecorded(clashing []int) []int {
	k := n.kept
	if k == nil || len(clashing) == 0 {
		return clashing
	}
	limit := len(clashing) + len(k.owner) + 1
	var rest []int
	for _, i := range clashing {
		in := inputOf(n.p.Tasks[i])
		kept := false
		for c := 0; c <= limit && k.hasAny(in); c++ {
			if ns := n.candidate(i, c); n.free(ns) && k.holds(in, ns[0].stem+ns[0].tail) {
				n.take(i, ns)
				kept = true
				break
			}
		}
		if !kept {
			rest = append(rest, i)
		}
	}
	return rest
}

// nameRest gives the other clashing inputs the free names in the stable
// order: not another task's, nor held by a record of another input that
// still exists.
func (n *naming) nameRest(clashing []int) {
	for _, i := range clashing {
		in := ""
		if n.kept != nil {
			in = inputOf(n.p.Tasks[i])
		}
		ns := n.candidate(i, 1)
		for c := 2; !n.free(ns) || n.kept.otherOwns(in, ns[0].stem+ns[0].tail); c++ {
			ns = n.candidate(i, c)
		}
		n.take(i, ns)
	}
}

// apply sets each task's Stem, Output and (with a {variant} template)
// Paths from its final names.
func (n *naming) apply() {
	for i := range n.p.Tasks {
		t, f := &n.p.Tasks[i], n.final[i]
		t.Stem = f[0].stem
		t.Output = f[0].stem + f[0].tail
		t.Paths = nil
		if n.o.Name != nil && n.o.Name.hasVariant {
			for _, pl := range f {
				t.Paths = append(t.Paths, Output{Path: pl.stem + pl.tail})
			}
		}
	}
}

// warnings returns one warning per set of inputs that clash, naming the
// first output they share and every input's new name, in the stable
// order, and records each in Plan.Collisions.
func (n *naming) warnings() []string {
	var keys []string
	for k, ow := range n.owners {
		if len(ow) > 1 {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b string) int { return strings.Compare(n.shown[a], n.shown[b]) })
	warned := map[string]bool{}
	var warnings []string
	for _, k := range keys {
		ow := slices.Clone(n.owners[k])
		slices.SortStableFunc(ow, func(a, b int) int { return n.order(a, b) })
		set := fmt.Sprint(ow)
		if warned[set] {
			continue
		}
		warned[set] = true
		var names []string
		for _, i := range ow {
			names = append(names, fmt.Sprintf("%s → %s", n.p.Tasks[i].Input, n.p.Tasks[i].Output))
		}
		msg := fmt.Sprintf("%d inputs map to %s; writing them as %s", len(ow), n.shown[k], strings.Join(names, ", "))
		warnings = append(warnings, msg)
		for _, i := range ow {
			n.p.Collisions[msg] = append(n.p.Collisions[msg], n.p.Tasks[i].Input)
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
