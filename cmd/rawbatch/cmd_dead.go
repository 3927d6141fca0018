package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/rawbatch/rawbatch/queue"
)

// DeadOptions are the options of `rawbatch dead list|show|retry|purge`.
type DeadOptions struct {
	GlobalOptions
	Queue QueueOptions
	// Batch limits list, and retry/purge --all, to one batch; JSON prints
	// JSON (list: an array of queue.DeadLetter; show: one); All is retry's
	// and purge's --all.
	Batch string
	JSON  bool
	All   bool
}

// settings are the settings of every dead subcommand: the queue's,
// --batch and --json.
func (o *DeadOptions) settings() []setting {
	return append(o.Queue.settings(),
		batchSetting(&o.Batch, "only the dead letters of this batch"),
		setting{Name: "json", Default: false, Help: "print JSON", Apply: boolInto(&o.JSON)})
}

// allSetting is retry's and purge's --all.
func (o *DeadOptions) allSetting() setting {
	return setting{Name: "all", Default: false, Help: "every dead letter (of --batch, when given)", Apply: boolInto(&o.All)}
}

// newDeadCmd is `rawbatch dead`: the dead letters of the multi-host mode.
func newDeadCmd() *cobra.Command {
	var opts DeadOptions
	cmd := &cobra.Command{
		Use:   "dead list|show ID|retry ID...|purge ID...",
		Short: "List, show, retry or purge the jobs that failed for good (multi-host mode's dead letters)",
		Long: `The dead letters are the jobs that failed permanently on the workers (corrupt,
unsupported, decoder crash, timeout, over every worker's budget), whose
transient failures persisted, or that were delivered --max-deliver times
without finishing (they killed or stalled their workers), each with its
reason. list shows them (of --batch), show one in full, retry queues jobs
again (after fixing their cause), purge forgets them.`,
		Args: subcommandArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	addFlags(cmd.PersistentFlags(), opts.settings())
	sub := func(use, short string, args cobra.PositionalArgs, all bool, run func(context.Context, *queue.Client, DeadOptions, []string) error) *cobra.Command {
		sc := &cobra.Command{
			Use:   use,
			Short: short,
			Args:  args,
			RunE: func(cmd *cobra.Command, args []string) error {
				opts.GlobalOptions = globalOptions(cmd)
				decls := opts.settings()
				if all {
					decls = append(decls, opts.allSetting())
				}
				if _, err := resolve(cmd, decls, false); err != nil {
					return err
				}
				if all && opts.All == (len(args) > 0) {
					return fmt.Errorf("give the job IDs or --all (not both)")
				}
				c, err := opts.Queue.connect(cmd.Context(), "dead", 0, nil)
				if err != nil {
					return err
				}
				defer c.Close()
				return run(cmd.Context(), c, opts, args)
			},
		}
		if all {
			addFlags(sc.Flags(), []setting{opts.allSetting()})
		}
		return sc
	}
	cmd.AddCommand(
		sub("list", "List the dead letters: job, input, kind, reason", cobra.NoArgs, false, runDeadList),
		sub("show ID", "Show one dead letter in full", cobra.ExactArgs(1), false, runDeadShow),
		sub("retry ID...|--all", "Queue dead jobs again and remove their dead letters", cobra.ArbitraryArgs, true, runDeadRetry),
		sub("purge ID...|--all", "Remove dead letters", cobra.ArbitraryArgs, true, runDeadPurge),
	)
	return cmd
}

// runDeadList lists the dead letters, oldest first.
func runDeadList(ctx context.Context, c *queue.Client, opts DeadOptions, _ []string) error {
	dl, err := c.Dead(ctx, opts.Batch)
	if err != nil {
		return fmt.Errorf("the dead letters: %w", err)
	}
	if opts.JSON {
		if dl == nil {
			dl = []queue.DeadLetter{}
		}
		b, _ := json.MarshalIndent(dl, "", "  ")
		fmt.Fprintln(opts.Stdout, string(b))
		return nil
	}
	tw := tabwriter.NewWriter(opts.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tBATCH\tINPUT\tKIND\tATTEMPTS\tWHEN\tREASON")
	for _, d := range dl {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", d.Job.ID, clean(d.Job.Batch), clean(d.Job.Input), d.Kind, d.Attempts, d.Time.UTC().Format(time.RFC3339), clean(strings.TrimPrefix(d.Reason, d.Job.Input+": ")))
	}
	tw.Flush()
	fmt.Fprintf(opts.Stderr, "%s\n", plural(int64(len(dl)), "dead letter"))
	return nil
}

// runDeadShow prints one dead letter, named by its id or a unique prefix
// of it (deadByPrefix).
func runDeadShow(ctx context.Context, c *queue.Client, opts DeadOptions, args []string) error {
	id, err := deadByPrefix(ctx, c, args[0])
	if err != nil {
		return err
	}
	d, err := c.DeadLetterOf(ctx, id)
	if err != nil {
		return fmt.Errorf("dead letter %s: %w", id, err)
	}
	if opts.JSON {
		b, _ := json.MarshalIndent(d, "", "  ")
		fmt.Fprintln(opts.Stdout, string(b))
		return nil
	}
	fmt.Fprintf(opts.Stdout, "id:        %s\nbatch:     %s\ninput:     %s\noutdir:    %s\nkind:      %s\nreason:    %s\nattempts:  %d\nworker:    %s\nwhen:      %s\nsubmitted: %s by %s\n",
		d.Job.ID, clean(d.Job.Batch), clean(d.Job.Input), clean(d.Job.OutDir), d.Kind, clean(d.Reason), d.Attempts, clean(d.Worker),
		d.Time.UTC().Format(time.RFC3339), d.Job.Submitted.UTC().Format(time.RFC3339), clean(d.Job.Submitter))
	return nil
}

// minDeadPrefix is the fewest hex digits of a job id that dead show
// accepts as a prefix (as git accepts a short commit id).
const minDeadPrefix = 6

// deadByPrefix returns the id of the one dead letter whose id is arg or
// starts with arg (at least minDeadPrefix hex digits). Errors: arg too
// short or not hex, no dead letter has it, or several do (the error lists
// them).
func deadByPrefix(ctx context.Context, c *queue.Client, arg string) (string, error) {
	prefix := strings.ToLower(strings.TrimSpace(arg))
	if len(prefix) < minDeadPrefix || strings.Trim(prefix, "0123456789abcdef") != "" {
		return "", fmt.Errorf("dead letter %q: want a job id, or at least %d of its first hex digits", arg, minDeadPrefix)
	}
	dl, err := c.Dead(ctx, "")
	if err != nil {
		return "", fmt.Errorf("the dead letters: %w", err)
	}
	var matches []string
	for _, d := range dl {
		if d.Job.ID == prefix {
			return d.Job.ID, nil
		}
		if strings.HasPrefix(d.Job.ID, prefix) {
			matches = append(matches, fmt.Sprintf("%s (%s)", d.Job.ID, clean(d.Job.Input)))
		}
	}
	switch len(matches) {
	case 0:
		return "", fmt.Errorf("dead letter %s: no dead letter has this id ('rawbatch dead list' shows them)", arg)
	case 1:
		return strings.Fields(matches[0])[0], nil
	}
	return "", fmt.Errorf("dead letter %s is ambiguous: %d dead letters start with it: %s", arg, len(matches), strings.Join(matches, ", "))
}

// deadIDs returns args, or with --all the ids of every dead letter (of
// --batch).
func deadIDs(ctx context.Context, c *queue.Client, opts DeadOptions, args []string) ([]string, error) {
	if !opts.All {
		// Each a whole id or a unique prefix of one, as dead show takes.
		ids := make([]string, 0, len(args))
		for _, a := range args {
			id, err := deadByPrefix(ctx, c, a)
			if err != nil {
				return nil, err
			}
			ids = append(ids, id)
		}
		return ids, nil
	}
	dl, err := c.Dead(ctx, opts.Batch)
	if err != nil {
		return nil, fmt.Errorf("the dead letters: %w", err)
	}
	var ids []string
	for _, d := range dl {
		ids = append(ids, d.Job.ID)
	}
	return ids, nil
}

// runDeadRetry queues the dead jobs again.
func runDeadRetry(ctx context.Context, c *queue.Client, opts DeadOptions, args []string) error {
	return eachDead(ctx, c, opts, args, "queued again", c.Retry)
}

// runDeadPurge removes dead letters.
func runDeadPurge(ctx context.Context, c *queue.Client, opts DeadOptions, args []string) error {
	return eachDead(ctx, c, opts, args, "purged", c.Purge)
}

// eachDead applies do to each dead job of args (or --all), saying done of
// each; the error joins every job's that failed.
func eachDead(ctx context.Context, c *queue.Client, opts DeadOptions, args []string, done string, do func(context.Context, string) error) error {
	ids, err := deadIDs(ctx, c, opts, args)
	if err != nil {
		return err
	}
	var errs []error
	n := 0
	for _, id := range ids {
		if err := do(ctx, id); err != nil {
			if errors.Is(err, queue.ErrRefused) && n == 0 {
				// The credentials' role may not: one line, as for any
				// refused client, naming the role that may.
				msg := err.Error()
				if i := strings.LastIndex(msg, queue.ErrRefused.Error()); i >= 0 {
					msg = msg[i+len(queue.ErrRefused.Error()):]
				}
				return fmt.Errorf("%w%s (jobs %s only with an admin's credentials, admin.creds)", queue.ErrRefused, msg, done)
			}
			errs = append(errs, fmt.Errorf("%s: %w", id, err))
			continue
		}
		n++
		fmt.Fprintf(opts.Stdout, "%s %s\n", id, done)
	}
	fmt.Fprintf(opts.Stderr, "%s %s\n", plural(int64(n), "job"), done)
	return errors.Join(errs...)
}
