package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/rawbatch/rawbatch/budget"
	"github.com/rawbatch/rawbatch/cache"
)

// newCacheCmd is `rawbatch cache stats|clear`: the stage cache of decoded
// images (see docs/cache.md).
func newCacheCmd() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "cache",
		Short: "Show or clear the stage cache of decoded images",
	}
	cmd.PersistentFlags().StringVar(&dir, "cache-dir", cache.DefaultDir(), "stage cache directory")
	cmd.AddCommand(&cobra.Command{
		Use:   "stats",
		Short: "Print the number and size of cached decoded images",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := cache.Open(dir, 0)
			if err != nil {
				return err
			}
			st, err := c.Stats()
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "cache:       %s\n", st.Dir)
			fmt.Fprintf(out, "entries:     %d\n", st.Entries)
			fmt.Fprintf(out, "size:        %s\n", budget.FormatSize(st.Bytes))
			fmt.Fprintf(out, "file system: %s, %s free\n", budget.FormatSize(st.FSSize), budget.FormatSize(st.FSFree))
			return nil
		},
	}, &cobra.Command{
		Use:   "clear",
		Short: "Delete every cached decoded image",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := cache.Open(dir, 0)
			if err != nil {
				return err
			}
			n, err := c.Clear()
			fmt.Fprintf(cmd.OutOrStdout(), "removed %d entries from %s\n", n, dir)
			return err
		},
	})
	return cmd
}
