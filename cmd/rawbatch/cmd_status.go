package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/rawbatch/rawbatch/budget"
	"github.com/rawbatch/rawbatch/queue"
)

// StatusOptions are the options of `rawbatch status`.
type StatusOptions struct {
	GlobalOptions
	Queue QueueOptions
	// Batch limits the job counts to one batch ("": all); Watch redraws
	// every 2 s; JSON prints one JSON document (statusReport).
	Batch       string
	Watch, JSON bool
}

// AddFlags adds the flags of status's settings to f.
func (o *StatusOptions) AddFlags(f *pflag.FlagSet) { addFlags(f, o.settings()) }

// settings are the queue's settings and status's own.
func (o *StatusOptions) settings() []setting {
	return append(o.Queue.settings(),
		batchSetting(&o.Batch, "count only the jobs of this batch (submit prints its name)"),
		setting{Name: "watch", Default: false, Help: "redraw every 2 seconds until interrupted", Apply: boolInto(&o.Watch)},
		setting{Name: "json", Default: false, Help: "print one JSON document", Apply: boolInto(&o.JSON)})
}

// newStatusCmd is `rawbatch status`: the queue's state.
func newStatusCmd() *cobra.Command {
	var opts StatusOptions
	cmd := &cobra.Command{
		Use:   "status [--batch NAME] [--watch] [--json]",
		Short: "Show the queue of the multi-host mode: depth per size class, jobs in flight and where, counts, stage times",
		Long: `Show the broker's queue (--nats): the jobs waiting per size class and the age of
the oldest, the jobs in flight and on which worker, the workers alive with
their memory budget, the jobs queued, processing, retrying, processed and
failed (of --batch, or all), the dead letters, and the time per stage of the
processed jobs (median, 90th percentile, maximum, in seconds).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.GlobalOptions = globalOptions(cmd)
			if _, err := resolve(cmd, opts.settings(), false); err != nil {
				return err
			}
			return runStatus(cmd.Context(), opts, args)
		},
	}
	opts.AddFlags(cmd.Flags())
	return cmd
}

// statusReport is status's JSON document.
type statusReport struct {
	Batch string          `json:"batch,omitempty"`
	Queue queue.QueueInfo `json:"queue"`
	// Jobs counts the jobs by state (queued, processing, retrying,
	// processed, failed).
	Jobs map[queue.State]int `json:"jobs"`
	// Stages are per-stage seconds over the processed jobs.
	Stages map[string]stageTimes `json:"stages"`
}

// stageTimes are a stage's seconds: median, 90th percentile, maximum, and
// the number of jobs.
type stageTimes struct {
	P50   float64 `json:"p50_seconds"`
	P90   float64 `json:"p90_seconds"`
	Max   float64 `json:"max_seconds"`
	Count int     `json:"count"`
}

// runStatus prints the queue's state, once or every 2 s.
func runStatus(ctx context.Context, opts StatusOptions, _ []string) error {
	c, err := opts.Queue.connect(ctx, "status", 0, nil)
	if err != nil {
		return err
	}
	defer c.Close()
	for {
		sr, err := queueStatus(ctx, c, opts.Batch)
		if err != nil {
			return err
		}
		if opts.JSON {
			b, _ := json.MarshalIndent(sr, "", "  ")
			fmt.Fprintln(opts.Stdout, string(b))
		} else {
			if opts.Watch {
				fmt.Fprint(opts.Stdout, "\033[H\033[2J") // clear the screen
			}
			printStatus(opts.Stdout, sr)
		}
		if !opts.Watch {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(2 * time.Second):
		}
	}
}

// queueStatus gathers the queue's state and the statuses of batch's jobs;
// with a batch, Queue.Dead counts that batch's dead letters only.
func queueStatus(ctx context.Context, c *queue.Client, batchName string) (statusReport, error) {
	info, err := c.Info(ctx)
	if err != nil {
		return statusReport{}, fmt.Errorf("the queue's state: %w", err)
	}
	sts, err := c.Statuses(ctx, batchName)
	if err != nil {
		return statusReport{}, fmt.Errorf("the jobs' statuses: %w", err)
	}
	sr := statusReport{Batch: batchName, Queue: info, Stages: map[string]stageTimes{},
		Jobs: map[queue.State]int{queue.Queued: 0, queue.Processing: 0, queue.Retrying: 0, queue.Processed: 0, queue.Failed: 0}}
	if sr.Queue.Depth == nil {
		sr.Queue.Depth = map[string]int{}
	}
	if sr.Queue.Workers == nil {
		sr.Queue.Workers = []queue.WorkerInfo{}
	}
	if batchName != "" { // the batch's dead letters, not every batch's
		dl, err := c.Dead(ctx, batchName)
		if err != nil {
			return statusReport{}, fmt.Errorf("the dead letters: %w", err)
		}
		sr.Queue.Dead = len(dl)
	}
	samples := map[string][]float64{}
	for _, st := range sts {
		sr.Jobs[st.State]++
		if st.State == queue.Processed {
			for stage, s := range st.Stages {
				samples[stage] = append(samples[stage], s)
			}
		}
	}
	for stage, xs := range samples {
		sr.Stages[stage] = stageTimesOf(xs)
	}
	return sr, nil
}

// stageTimesOf returns the median, 90th percentile (nearest rank) and
// maximum of xs (not empty).
func stageTimesOf(xs []float64) stageTimes {
	slices.Sort(xs)
	rank := func(p float64) float64 {
		i := int(math.Ceil(p*float64(len(xs)))) - 1
		return xs[max(0, min(i, len(xs)-1))]
	}
	return stageTimes{P50: rank(0.5), P90: rank(0.9), Max: xs[len(xs)-1], Count: len(xs)}
}

// printStatus prints sr as text.
func printStatus(w io.Writer, sr statusReport) {
	q := sr.Queue
	waiting := 0
	var classes []string
	for cl, n := range q.Depth {
		waiting += n
		if n > 0 {
			classes = append(classes, fmt.Sprintf("%s %d", cl, n))
		}
	}
	sort.Strings(classes)
	line := fmt.Sprintf("queue: %d waiting", waiting)
	if len(classes) > 0 {
		line += " (" + strings.Join(classes, ", ") + ")"
	}
	if q.Oldest > 0 {
		line += fmt.Sprintf(", oldest %s", (time.Duration(q.Oldest * float64(time.Second))).Round(time.Second))
	}
	fmt.Fprintf(w, "%s, %d in flight, %d dead letters\n", line, q.InFlight, q.Dead)
	of := "jobs"
	if sr.Batch != "" {
		of = "jobs of batch " + sr.Batch
	}
	fmt.Fprintf(w, "%s: %d queued, %d processing, %d retrying, %d processed, %d failed\n", of,
		sr.Jobs[queue.Queued], sr.Jobs[queue.Processing], sr.Jobs[queue.Retrying], sr.Jobs[queue.Processed], sr.Jobs[queue.Failed])
	if q.Submitter != "" {
		fmt.Fprintf(w, "workers: not shown to the submitter %s (dead letters: its own)\n", q.Submitter)
	} else {
		fmt.Fprintf(w, "workers: %d\n", len(q.Workers))
	}
	for _, wi := range q.Workers {
		fmt.Fprintf(w, "  %s: %d/%d jobs, %s of %s in use", clean(wi.Name), len(wi.Running), wi.Jobs, budget.FormatSize(wi.InUse), budget.FormatSize(wi.Budget))
		if len(wi.Inputs) > 0 {
			fmt.Fprintf(w, ": %s", clean(strings.Join(wi.Inputs, ", ")))
		}
		fmt.Fprintln(w)
	}
	if len(sr.Stages) > 0 {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "STAGE\tP50\tP90\tMAX\tJOBS")
		var names []string
		for n := range sr.Stages {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			s := sr.Stages[n]
			fmt.Fprintf(tw, "%s\t%.2fs\t%.2fs\t%.2fs\t%d\n", n, s.P50, s.P90, s.Max, s.Count)
		}
		tw.Flush()
	}
}
