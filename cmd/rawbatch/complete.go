package main

import (
	"github.com/spf13/cobra"
)

// registerCompletions gives shell completion (`rawbatch completion bash`)
// the Values of each setting of decls that declares them.
func registerCompletions(cmd *cobra.Command, decls []setting) {
	for _, d := range decls {
		if d.Values == nil || cmd.Flags().Lookup(d.Name) == nil {
			continue
		}
		list := d.Values
		cmd.RegisterFlagCompletionFunc(d.Name, func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			return list(), cobra.ShellCompDirectiveNoFileComp
		})
	}
}

// accepted returns the candidates that parse accepts: a setting's
// completion list follows its parser, a candidate the parser refuses is
// left out.
func accepted(parse func(string) error, candidates ...string) func() []string {
	return func() []string {
		var out []string
		for _, c := range candidates {
			if parse(c) == nil {
				out = append(out, c)
			}
		}
		return out
	}
}
