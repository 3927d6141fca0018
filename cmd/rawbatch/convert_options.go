package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/rawbatch/rawbatch/batch"
	"github.com/rawbatch/rawbatch/budget"
	"github.com/rawbatch/rawbatch/cache"
	"github.com/rawbatch/rawbatch/pipeline"
	"github.com/spf13/cast"
	"github.com/spf13/pflag"
)

// ConvertConfig are the options of `rawbatch convert`: each field is filled
// by one setting of settings (flag > RAWBATCH_* environment > config file >
// default), parsed and validated there. The batch runner only ever sees
// these plain values (runner).
type ConvertConfig struct {
	GlobalOptions
	// watching: the run is one of `rawbatch watch`'s (its hints say so).
	watching bool
	Inputs   []string
	OutDir   string
	Jobs     int
	// tailJob: --jobs was not given, so the last file may start as one
	// more (batch.Runner.TailJob).
	tailJob bool
	Quiet   bool
	// LogFormat is --log-format: logText or logJSON.
	LogFormat string
	// MemBudget is the memory budget in bytes (--mem-budget).
	MemBudget int64
	DryRun    bool
	// Timeout per file (0: scaled by size) and Grace after an interrupt.
	Timeout, Grace time.Duration
	// Re-run and overlap control (see batch.Runner).
	Force            bool
	LockWait, MinAge time.Duration
	Retries          int
	Report           string
	// Gallery: write OUTDIR/index.html, a static page of every recorded
	// file with its thumbnail, and of the failures (--gallery).
	Gallery bool
	// The stage cache: directory, cap in bytes, keep entries after the run.
	CacheDir  string
	CacheSize int64
	KeepCache bool
	Settings  pipeline.Settings
	// Presets are the config file's presets (readPresets): each file
	// the most specific one matches is converted with its settings.
	Presets []batch.Preset
	// Find chooses the input files (inputs.go).
	Find FindOptions
	// Resolved is every convert setting by flag name, for the report;
	// Warnings are the warnings about the settings (RAWBATCH_* typos).
	Resolved map[string]any
	Warnings []string

	// Overwrite: write over files rawbatch did not write (--overwrite);
	// NoRecreate: do not make again outputs the user deleted.
	Overwrite, NoRecreate bool
	// EditedKeep: leave alone outputs changed since rawbatch wrote them,
	// reporting their files as kept (--edited keep).
	EditedKeep bool
	// KnownFailuresSkip: report files that failed before with the same
	// content and settings as known failures (--known-failures skip).
	KnownFailuresSkip bool
	// LockWaitOther bounds the wait for a run making other outputs of a
	// file: --lock-wait when given, else batch.DefaultLockWaitOther.
	LockWaitOther time.Duration
}

// AddFlags adds the flags of convert's settings to f.
func (c *ConvertConfig) AddFlags(f *pflag.FlagSet) { addFlags(f, c.settings()) }

// settings declares each setting of convert, once: its flag, config key
// and environment variable come from its name (setting), and its Apply
// parses and validates it into c. They are applied in this order, so a
// setting that depends on others comes after them: --quality validates
// the picture settings before it, --variant depends on --format,
// --quality and --jpeg-subsampling, --cache-size on --cache-dir, --base
// on --files-from and --null.
func (c *ConvertConfig) settings() []setting {
	decls := c.placeSettings()
	decls = append(decls, c.pictureSettings()...)
	decls = append(decls, c.outputSettings()...)
	decls = append(decls, c.runSettings()...)
	decls = append(decls, c.rerunSettings()...)
	decls = append(decls, c.variantSettings()...)
	decls = append(decls, c.cacheSettings()...)
	return append(decls, c.findSettings()...)
}

// placeSettings are where the inputs come from and the outputs go.
func (c *ConvertConfig) placeSettings() []setting {
	return []setting{
		{Name: "files-from", Default: "", Help: "also convert the files listed in this file, one a line ('-': standard input); with --base, their folders are mirrored under OUTDIR",
			Apply: func(v value) (err error) {
				// Paths, expanded as output's are ("-" is standard input).
				if c.Find.FilesFrom = v.String(); c.Find.FilesFrom != "-" {
					if c.Find.FilesFrom, err = pathSetting(v); err != nil {
						return err
					}
				}
				if len(c.Inputs) == 0 && c.Find.FilesFrom == "" {
					return fmt.Errorf("requires at least 1 arg: the INPUT folders or files to convert (or --files-from FILE)")
				}
				return nil
			}},
		{Name: "output", Short: "o", Default: "", Help: "output directory (created if missing)",
			Apply: func(v value) (err error) {
				if c.OutDir, err = pathSetting(v); err == nil && c.OutDir == "" {
					err = fmt.Errorf("no output directory: give -o OUTDIR (or RAWBATCH_OUTPUT, or output: in the config file)")
				}
				return err
			}},
	}
}

// pictureSettings are the develop's settings shared by every output: the
// table of choices (pipeline.Choices), then the others.
func (c *ConvertConfig) pictureSettings() []setting {
	d := pipeline.DefaultSettings()
	s := &c.Settings
	var decls []setting
	for _, ch := range pipeline.Choices {
		decls = append(decls, choiceSetting(ch, s))
	}
	return append(decls,
		parsedSetting("wb", d.WhiteBalance.String(), "white balance: camera (as shot; when the file has none usable, fitted to its embedded preview or estimated from the raw data, with a warning), auto (grey world), daylight, or R,G,B multipliers",
			&s.WhiteBalance, pipeline.ParseWhiteBalance, "camera", "auto", "daylight"),
		parsedSetting("tone", string(d.Tone), "tone curve: default (the DNG's ProfileToneCurve, else rawbatch's curve, mid grey 0.18 → 0.39) or none",
			&s.Tone, pipeline.ParseToneCurve, "default", "none"),
		parsedSetting("denoise", d.Denoise, "noise reduction (docs/denoise.md): auto (off up to ISO 400, then stronger with ISO, thresholds scaled by the noise measured in the file), off, or a strength from 0 to 4 (1: auto's at ISO 6400)",
			&s.Denoise, pipeline.ParseDenoise, "auto", "off", "0.5", "1", "2"),
		parsedSetting("capture-sharpen", d.CaptureSharpen, "capture sharpening of the full image before resize (docs/denoise.md): auto (0.8 after the default rcd demosaic, less at half size and after noise reduction), off, or an amount from 0 to 4",
			&s.CaptureSharpen, pipeline.ParseCaptureSharpen, "auto", "off", "0.5", "1"),
		setting{Name: "lens-db", Default: "", Help: "a directory of extra lensfun XML profiles, used besides lensfun's own database",
			Apply: func(v value) (err error) { s.LensDB, err = lensDBSetting(v); return err }},
		setting{Name: "lens-model", Default: "", Help: "the lens to look up in lensfun instead of the one the file names (for files that name none or a wrong one)",
			Apply: func(v value) error { s.LensModel = strings.TrimSpace(v.String()); return nil }},
		setting{Name: "exposure", Default: d.Exposure, Help: "exposure change in EV",
			Apply: func(v value) (err error) {
				if s.Exposure, err = cast.ToFloat64E(v.Raw()); err != nil {
					return fmt.Errorf("--exposure: %q is not a number of EV", v.String())
				}
				if err := pipeline.CheckExposure(s.Exposure); err != nil {
					return fmt.Errorf("--exposure %w", err)
				}
				return nil
			}},
		setting{Name: "baseline-exposure", Default: d.BaselineExposure, Help: "add the DNG BaselineExposure tag to --exposure",
			Apply: boolInto(&s.BaselineExposure)},
		setting{Name: "half-size", Default: d.HalfSize, Help: "decode at half width and height without demosaic (a quarter of the pixels, less memory)",
			Apply: boolInto(&s.HalfSize)},
	)
}

// outputSettings are the single default output's format and quality (also
// the variants' default quality) and the metadata of every output.
func (c *ConvertConfig) outputSettings() []setting {
	d := pipeline.DefaultSettings()
	s := &c.Settings
	return []setting{
		parsedSetting("format", string(d.Format), "output format of the single default output (sRGB, full size): "+pipeline.FormatNames+"; not with --variant or --preset",
			&s.Format, pipeline.ParseFormat, "jpeg", "png16", "png8", "tiff16", "tiff8", "tiff", "webp", "avif", "jxl", "uhdr"),
		{Name: "quality", Default: d.Quality, Help: "JPEG quality, 1..100; also the default quality of JPEG and WebP variants",
			Apply: func(v value) (err error) {
				if s.Quality, err = wholeNumber(v); err != nil {
					return err
				}
				if err := pipeline.CheckQuality(s.Quality); err != nil {
					return fmt.Errorf("--quality %w", err)
				}
				// The settings so far (exposure, quality, ...) against
				// the pipeline's one rule of each.
				return s.Validate()
			}},
		{Name: "strip-metadata", Default: d.StripMetadata, Help: "write only what colour management needs: the ICC profile and EXIF Orientation; no other EXIF, no GPS, no XMP",
			Apply: boolInto(&s.StripMetadata)},
		{Name: "artist", Default: d.Artist, Help: "EXIF Artist of every output, in place of the raw's",
			Apply: func(v value) error { s.Artist = v.String(); return nil }},
		{Name: "copyright", Default: d.Copyright, Help: "EXIF Copyright of every output, in place of the raw's",
			Apply: func(v value) error { s.Copyright = v.String(); return nil }},
	}
}

// runSettings are how the run goes: concurrency, output lines, time
// limits, the report.
func (c *ConvertConfig) runSettings() []setting {
	return []setting{
		{Name: "jobs", Short: "j", Default: 0, Help: "most files converted at once (default: the number of CPUs, and the last file of a run starts as one more rather than run alone at the end)",
			Apply: func(v value) (err error) {
				if c.Jobs, err = wholeNumber(v); err != nil {
					return err
				}
				switch {
				case c.Jobs < 0:
					return fmt.Errorf("--jobs %d: want a positive number, or 0 for the default (the number of CPUs, one more for the last file)", c.Jobs)
				case c.Jobs == 0:
					c.Jobs, c.tailJob = runtime.NumCPU(), true
				}
				return nil
			}},
		{Name: "quiet", Short: "q", Default: false, Help: "print only failures, warnings and the summary, files locked by another run as its count (no progress bar, no line per converted or skipped file, no housekeeping notes, a collision warning only when a renamed output is written)",
			Apply: boolInto(&c.Quiet)},
		{Name: "log-format", Default: logText, Help: "format of the lines printed: text, or json (one object per line); text lines that are not on a terminal start with a UTC timestamp",
			Values: func() []string { return []string{logText, logJSON} },
			Apply: func(v value) error {
				if c.LogFormat = v.String(); c.LogFormat != logText && c.LogFormat != logJSON {
					return fmt.Errorf("--log-format %q: want text or json", c.LogFormat)
				}
				return nil
			}},
		{Name: "dry-run", Default: false, Help: "list what would be converted, with memory estimates and planned concurrency; decode and create nothing (exit 3 if a file would fail, 1 if OUTDIR cannot be written, as the run would)",
			Apply: boolInto(&c.DryRun)},
		{Name: "timeout", Default: time.Duration(0), Help: "longest one file may take before its worker is killed (default 60s + 3s per megapixel)",
			Apply: durationInto(&c.Timeout)},
		{Name: "grace", Default: 10 * time.Second, Help: "on SIGINT/SIGTERM, how long files in flight may finish before they are aborted (a second signal aborts them at once)",
			Apply: durationInto(&c.Grace)},
		{Name: "retries", Default: 2, Help: "retries of a transient failure (no space left, interrupted I/O)",
			Apply: func(v value) (err error) {
				if c.Retries, err = wholeNumber(v); err == nil && c.Retries < 0 {
					err = fmt.Errorf("--retries %d: want 0 or more", c.Retries)
				}
				return err
			}},
		{Name: "report", Default: "", Help: "write the run (with --dry-run: the plan) as JSON to this file, see docs/report.schema.json (never an input, an output, another existing file or a .jpg/.tif/.png/.webp name)",
			Apply: func(v value) (err error) { c.Report, err = pathSetting(v); return err }},
	}
}

// The values of --edited.
const (
	editedFail = "fail"
	editedKeep = "keep"
)

// The values of --known-failures.
const (
	knownFail = "fail"
	knownSkip = "skip"
)

// rerunSettings are what a run does with outputs that exist, and with
// files other runs hold or that are still being written.
func (c *ConvertConfig) rerunSettings() []setting {
	return []setting{
		{Name: "force", Default: false, Help: "convert every file again, even when rawbatch's output is up to date (never over a file rawbatch did not write: see --overwrite)",
			Apply: boolInto(&c.Force)},
		{Name: "overwrite", Default: false, Help: "also write over files at output paths that rawbatch did not write, or that changed since it wrote them (never over an input or another input's output)",
			Apply: boolInto(&c.Overwrite)},
		{Name: "gallery", Default: false, Help: "write OUTDIR/index.html after the run: a static page (no script, no network) with a thumbnail (OUTDIR/.gallery), name, camera, lens, capture time, rating and label of every file recorded in OUTDIR, and every failed file with its reason",
			Apply: boolInto(&c.Gallery)},
		{Name: "no-recreate", Default: false, Help: "do not make again an output that rawbatch wrote and that was deleted since (culling)",
			Apply: boolInto(&c.NoRecreate)},
		{Name: "edited", Default: editedFail, Help: "what to do with an output that rawbatch wrote and another program changed since: fail (the file fails, exit 3), or keep (leave it alone and report the file as kept, not failed: for nightly runs); --overwrite writes over it",
			Values: func() []string { return []string{editedFail, editedKeep} },
			Apply: func(v value) error {
				switch v.String() {
				case editedFail, editedKeep:
					c.EditedKeep = v.String() == editedKeep
					return nil
				}
				return fmt.Errorf("--edited %q: want keep or fail", v.String())
			}},
		{Name: "known-failures", Default: knownFail, Help: "what to do with a file that failed in an earlier run (corrupt, not a raw file, unsupported, crashed) and has the same content and settings: fail (try it again; it fails again, exit 3), or skip (report it as a known failure, still listed, without failing the run: for nightly runs); a changed file or changed settings are tried again",
			Values: func() []string { return []string{knownFail, knownSkip} },
			Apply: func(v value) error {
				switch v.String() {
				case knownFail, knownSkip:
					c.KnownFailuresSkip = v.String() == knownSkip
					return nil
				}
				return fmt.Errorf("--known-failures %q: want skip or fail", v.String())
			}},
		{Name: "lock-wait", Default: time.Duration(0), Help: "how long to keep retrying a file locked by another run (0: report it and move on); when not given, a run making other outputs of the file (other variants, another input of the same name) is waited for up to 10m, then the file fails",
			Apply: func(v value) (err error) {
				if c.LockWait, err = duration(v); err != nil {
					return err
				}
				c.LockWaitOther = batch.DefaultLockWaitOther
				if v.From() != unset {
					c.LockWaitOther = c.LockWait
				}
				return nil
			}},
		{Name: "min-age", Default: 2 * time.Second, Help: "files modified more recently are waited for until this old, and skipped as still being written if they changed meanwhile; a file found truncated and modified within the last minute is taken as still being written too, unless --min-age 0 (do not wait: a truncated file fails)",
			Apply: durationInto(&c.MinAge)},
	}
}

// variantSettings are the outputs of each file, when not the single
// default one: a preset or a list of variants (one choice, with --format:
// variants).
func (c *ConvertConfig) variantSettings() []setting {
	s := &c.Settings
	return []setting{
		{Name: "preset", Default: "", Help: "a set of variants: web (2048 px JPEG + 512 px WebP thumb), print (TIFF16 Adobe RGB), archive (TIFF16 ProPhoto)",
			// One choice with --variant: resolved and checked there.
			Values: accepted(func(s string) error { _, err := pipeline.Preset(s, 0); return err }, "web", "print", "archive"),
			Apply:  func(value) error { return nil }},
		{Name: "variant", Default: []string(nil), Keys: []string{"variants"},
			Help: "an output variant " + pipeline.VariantSyntax + "; repeatable (formats " + pipeline.FormatNames + "; spaces srgb, displayp3, adobergb, prophoto, rec2020; compress and predictor for tiff8/tiff16; depth, speed, subsampling and hdr for avif; depth, effort, lossless and hdr for jxl; subsampling, headroom, gainmap-scale and gainmap-quality for uhdr)",
			Apply: func(v value) (err error) {
				if s.Variants, err = variants(v, *s); err != nil {
					return err
				}
				return s.Validate()
			}},
	}
}

// cacheSettings are the stage cache's and the memory budget's.
func (c *ConvertConfig) cacheSettings() []setting {
	var cacheFS int64 // the size of the cache directory's file system
	return []setting{
		cacheDirSetting(func(v value) (err error) {
			if c.CacheDir, err = pathSetting(v); err != nil || c.CacheDir == "" {
				return err // "": no cache
			}
			if cacheFS, err = budget.FileSystemSize(c.CacheDir); err != nil {
				return fmt.Errorf("--cache-dir %s: %w", c.CacheDir, err)
			}
			return nil
		}),
		{Name: "keep-cache", Default: false, Help: "keep decoded images in the cache after the run, so adding a variant later decodes nothing",
			Apply: boolInto(&c.KeepCache)},
		{Name: "cache-size", Default: "", Help: "cap of the stage cache, applied when the run starts and on every write: 2GiB, 25% (default 25% of the cache's file system)",
			Apply: func(v value) error {
				if c.CacheDir == "" {
					return nil // no cache
				}
				var err error
				c.CacheSize = cacheFS / 4
				if cs := v.String(); cs != "" {
					if c.CacheSize, err = budget.ParseSize(cs, cacheFS); err != nil {
						return fmt.Errorf("--cache-size: %w", err)
					}
				}
				return nil
			}},
		{Name: "mem-budget", Default: "", Help: "memory budget: 4GiB, 3500MB or 50% (default 50% of the smaller of the cgroup limit and available memory)",
			Apply: func(v value) (err error) {
				if c.MemBudget, err = memBudget(v.String()); err != nil {
					return fmt.Errorf("--mem-budget: %w", err)
				}
				return nil
			}},
	}
}

// findSettings choose the input files of the folders walked and name
// their outputs.
func (c *ConvertConfig) findSettings() []setting {
	return []setting{
		{Name: "include", Default: []string(nil), Help: "take only walked files whose relative path matches this glob at any depth (*, ?, [a-z], ** for any folders; a leading / anchors it to the input root; case-insensitive); repeatable",
			Apply: func(v value) (err error) { c.Find.Include, err = globList(v); return err }},
		{Name: "exclude", Default: []string(nil), Help: "skip walked files and folders whose relative path matches this glob at any depth (a leading / anchors it); repeatable",
			Apply: func(v value) (err error) { c.Find.Exclude, err = globList(v); return err }},
		{Name: "min-rating", Default: "", Help: "take only files whose XMP (sidecar IMG.xmp or IMG.EXT.xmp) rating is at least N, -1 (rejected) to 5; an unrated file counts as 0",
			Apply: func(v value) error {
				if v.String() == "" {
					return nil
				}
				n, err := wholeNumber(v)
				if err != nil || n < -1 || n > 5 {
					return fmt.Errorf("--min-rating: %q is not a rating from -1 to 5", v.String())
				}
				c.Find.Rating.MinRating, c.Find.Rating.HasMin = n, true
				return nil
			}},
		{Name: "label", Default: "", Help: "take only files whose XMP (sidecar) colour label is one of these, comma-separated (Red,Green; case-insensitive)",
			Apply: func(v value) error {
				c.Find.Rating.Labels = nil
				for _, l := range strings.Split(v.String(), ",") {
					if l = strings.TrimSpace(l); l != "" {
						c.Find.Rating.Labels = append(c.Find.Rating.Labels, l)
					}
				}
				return nil
			}},
		{Name: "skip-rejected", Default: false, Help: "leave out files whose XMP (sidecar) rating is -1 (rejected)",
			Apply: func(v value) error {
				if err := boolInto(&c.Find.Rating.SkipRejected)(v); err != nil {
					return err
				}
				// The choices (--sidecar) are applied before, and
				// --min-rating and --label just before.
				if f := c.Find.Rating; c.Settings.Sidecar == "off" && (f.HasMin || len(f.Labels) > 0 || f.SkipRejected) {
					return fmt.Errorf("--min-rating, --label and --skip-rejected read the XMP sidecars: not with --sidecar off")
				}
				return nil
			}},
		{Name: "fail-if-empty", Default: false, Help: "exit with status 3 when no RAW file is found (an empty or unmounted input), or none is converted and some are still being written",
			Apply: boolInto(&c.Find.FailIfEmpty)},
		{Name: "null", Short: "0", Default: false, Help: "--files-from's list is NUL-separated (find -print0)",
			Apply: boolInto(&c.Find.Null)},
		{Name: "name", Default: batch.DefaultNameTemplate, Help: "output name template: {stem}, {ext}, {dir}, {variant}, {date:2006-01-02} (capture date, Go layout), {camera}, {seq}; a / makes folders under OUTDIR ({date:2006/01}/{stem})",
			Apply: func(v value) (err error) {
				if name := v.String(); name != batch.DefaultNameTemplate {
					if c.Find.Name, err = batch.ParseNameTemplate(name); err != nil {
						return fmt.Errorf("--name: %w", err)
					}
				}
				return nil
			}},
		{Name: "base", Default: "", Help: "with --files-from: the folder the listed files' output paths are relative to (a listed file outside it fails)",
			Apply: func(v value) (err error) {
				if c.Find.Base, err = pathSetting(v); err != nil {
					return err
				}
				return c.Find.checkBase(v)
			}},
	}
}

// choiceSetting declares the setting of a row of pipeline.Choices: its
// name, default, help and values are the table's, its Apply the table's
// parse into s.
func choiceSetting(ch *pipeline.Choice, s *pipeline.Settings) setting {
	return setting{Name: ch.Name, Default: ch.Default, Help: ch.Help, Values: ch.List,
		Apply: func(v value) error { return ch.Set(s, v.String()) }}
}

// parsedSetting declares a setting of one string parsed into *dst by
// parse (an error names it: "--tone: ..."), completed with the candidates
// parse accepts.
func parsedSetting[T any](name, def, help string, dst *T, parse func(string) (T, error), candidates ...string) setting {
	return setting{Name: name, Default: def, Help: help,
		Values: accepted(func(s string) error { _, err := parse(s); return err }, candidates...),
		Apply: func(v value) (err error) {
			if *dst, err = parse(v.String()); err != nil {
				return fmt.Errorf("--%s: %w", name, err)
			}
			return nil
		}}
}

// cacheDirSetting declares cache-dir, the stage cache directory, for
// convert and the cache commands, with their apply.
func cacheDirSetting(apply func(value) error) setting {
	return setting{Name: "cache-dir", Default: cache.DefaultDir(), Help: "stage cache directory for decoded images (tmpfs by default)", Apply: apply}
}

// runner is the batch runner of c: the one place where convert's options
// become the runner's fields. threads fixes every file's threads (0:
// decided as the budget admits each, batch.Runner.Threads), exe
// the executable the workers run, od the opened OUTDIR (its records and
// locks; nil in a dry run).
func (c ConvertConfig) runner(threads int, exe string, od *batch.OutDir) *batch.Runner {
	return &batch.Runner{Settings: c.Settings, Jobs: c.Jobs, TailJob: c.tailJob, Budget: c.MemBudget, Threads: threads,
		Exe: exe, Timeout: c.Timeout, Grace: c.Grace,
		State: od.State, Force: c.Force, Overwrite: c.Overwrite, NoRecreate: c.NoRecreate, EditedKeep: c.EditedKeep, KnownFailuresSkip: c.KnownFailuresSkip, OutDir: c.OutDir, SettingsHash: batch.SettingsHash(c.Settings), Version: Version(),
		Locks: od.Locks, LockWait: c.LockWait, LockWaitOther: c.LockWaitOther, MinAge: c.MinAge, NoSettle: c.MinAge == 0, Retries: c.Retries,
		CacheDir: c.CacheDir, CacheMax: c.CacheSize, KeepCache: c.KeepCache}
}

// lensDBSetting is the --lens-db directory: expanded as paths are, made
// absolute (worker processes and the settings hash see one spelling), and
// required to be a directory; "" when not set.
func lensDBSetting(v value) (string, error) {
	dir, err := pathSetting(v)
	if err != nil || dir == "" {
		return "", err
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return "", fmt.Errorf("--lens-db: %w", err)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("--lens-db %s: not a directory", v.String())
	}
	return dir, nil
}
