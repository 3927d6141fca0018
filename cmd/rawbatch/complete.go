package main

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/rawbatch/rawbatch/pipeline"
)

// registerCompletions gives shell completion (`rawbatch completion bash`)
// the values of convert's choice flags. Each list is what the parser
// accepts, checked against it, so it follows the parser: a candidate the
// parser refuses is left out.
func registerCompletions(cmd *cobra.Command) {
	accepted := func(parse func(string) error, candidates ...string) []string {
		var out []string
		for _, c := range candidates {
			if parse(c) == nil {
				out = append(out, c)
			}
		}
		return out
	}
	values := map[string]func() []string{
		"format": func() []string {
			return accepted(func(s string) error { _, err := pipeline.ParseFormat(s); return err },
				"jpeg", "png16", "png8", "tiff16", "tiff8", "tiff", "webp")
		},
		"demosaic": func() []string {
			return accepted(func(s string) error { _, err := pipeline.ParseDemosaic(s); return err },
				strings.Split(pipeline.DemosaicNames, "|")...)
		},
		"preset": func() []string {
			return accepted(func(s string) error { _, err := pipeline.Preset(s, 0); return err },
				"web", "print", "archive")
		},
		"wb": func() []string {
			return accepted(func(s string) error { _, err := pipeline.ParseWhiteBalance(s); return err },
				"camera", "auto", "daylight")
		},
		"tone": func() []string {
			return accepted(func(s string) error { _, err := pipeline.ParseToneCurve(s); return err },
				"default", "none")
		},
		"log-format": func() []string { return []string{logText, logJSON} },
	}
	for name, list := range values {
		if cmd.Flags().Lookup(name) == nil {
			continue
		}
		cmd.RegisterFlagCompletionFunc(name, func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			return list(), cobra.ShellCompDirectiveNoFileComp
		})
	}
}
