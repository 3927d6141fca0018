package queue

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/rawbatch/rawbatch/budget"
)

// stageBuckets are the upper bounds in seconds of rawbatch_stage_seconds.
var stageBuckets = []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

// fileResults are the values of rawbatch_files_total's result label.
var fileResults = []string{"converted", "up_to_date", "failed", "retried", "fenced"}

// histogram is one stage's observations.
type histogram struct {
	counts []uint64 // per bucket (not cumulative), then +Inf
	sum    float64
	n      uint64
}

type metrics struct {
	c *Client
	s *budget.Scheduler

	mu           sync.Mutex
	files        map[string]uint64
	redeliveries uint64
	leasesLost   uint64
	inFlight     int
	stages       map[string]*histogram
}

func newMetrics(c *Client, s *budget.Scheduler) *Metrics {
	return &Metrics{m: &metrics{c: c, s: s, files: map[string]uint64{}, stages: map[string]*histogram{}}}
}

func (m *Metrics) file(result string) {
	m.m.mu.Lock()
	m.m.files[result]++
	m.m.mu.Unlock()
}

func (m *Metrics) redelivered() {
	m.m.mu.Lock()
	m.m.redeliveries++
	m.m.mu.Unlock()
}

func (m *Metrics) leaseLost() {
	m.m.mu.Lock()
	m.m.leasesLost++
	m.m.mu.Unlock()
}

func (m *Metrics) inflight(d int) {
	m.m.mu.Lock()
	m.m.inFlight += d
	m.m.mu.Unlock()
}

// done counts a Done outcome and its stages.
func (m *Metrics) done(o Outcome) {
	r := "up_to_date"
	if o.Converted {
		r = "converted"
	}
	m.m.mu.Lock()
	defer m.m.mu.Unlock()
	m.m.files[r]++
	for stage, sec := range o.Stages {
		h := m.m.stages[stage]
		if h == nil {
			h = &histogram{counts: make([]uint64, len(stageBuckets)+1)}
			m.m.stages[stage] = h
		}
		i, _ := slices.BinarySearch(stageBuckets, sec)
		h.counts[i]++
		h.sum += sec
		h.n++
	}
}

// fmtFloat formats v as Prometheus' text format does.
func fmtFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// WriteText writes the metrics in Prometheus' text exposition format
// (version 0.0.4) to w. The queue's gauges (depth, oldest job, dead
// letters) are read from the broker, bounded by ctx and the client's call
// timeout; when it does not answer they have no sample and the error is
// returned after everything else was written.
func (m *Metrics) WriteText(ctx context.Context, w io.Writer) error {
	mm := m.m
	var qi QueueInfo
	var qerr error
	if mm.c != nil {
		qi, qerr = mm.c.info(ctx)
	} else {
		qerr = errors.New("queue: metrics without a client")
	}
	bw := bufio.NewWriter(w)
	head := func(name, typ, help string) {
		fmt.Fprintf(bw, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
	}
	head("rawbatch_queue_depth", "gauge", "Jobs waiting in the queue, per size class.")
	if qerr == nil {
		for _, class := range allClasses() {
			fmt.Fprintf(bw, "rawbatch_queue_depth{class=%q} %d\n", class, qi.Depth[class])
		}
	}
	mm.mu.Lock()
	head("rawbatch_jobs_inflight", "gauge", "Jobs this worker is running.")
	fmt.Fprintf(bw, "rawbatch_jobs_inflight %d\n", mm.inFlight)
	mm.mu.Unlock()
	head("rawbatch_oldest_job_age_seconds", "gauge", "Age of the oldest job in the queue, seconds (0: none).")
	if qerr == nil {
		fmt.Fprintf(bw, "rawbatch_oldest_job_age_seconds %s\n", fmtFloat(qi.Oldest))
	}
	head("rawbatch_dead_jobs", "gauge", "Jobs in the dead letters.")
	if qerr == nil {
		fmt.Fprintf(bw, "rawbatch_dead_jobs %d\n", qi.Dead)
	}
	mm.mu.Lock()
	head("rawbatch_files_total", "counter", "Deliveries this worker ended, by result.")
	for _, r := range fileResults {
		fmt.Fprintf(bw, "rawbatch_files_total{result=%q} %d\n", r, mm.files[r])
	}
	head("rawbatch_stage_seconds", "histogram", "Seconds spent in each stage of the files this worker converted.")
	stages := make([]string, 0, len(mm.stages))
	for s := range mm.stages {
		stages = append(stages, s)
	}
	slices.Sort(stages)
	for _, s := range stages {
		h := mm.stages[s]
		var cum uint64
		for i, le := range stageBuckets {
			cum += h.counts[i]
			fmt.Fprintf(bw, "rawbatch_stage_seconds_bucket{stage=%q,le=%q} %d\n", s, fmtFloat(le), cum)
		}
		cum += h.counts[len(stageBuckets)]
		fmt.Fprintf(bw, "rawbatch_stage_seconds_bucket{stage=%q,le=\"+Inf\"} %d\n", s, cum)
		fmt.Fprintf(bw, "rawbatch_stage_seconds_sum{stage=%q} %s\n", s, fmtFloat(h.sum))
		fmt.Fprintf(bw, "rawbatch_stage_seconds_count{stage=%q} %d\n", s, h.n)
	}
	head("rawbatch_redeliveries_total", "counter", "Deliveries to this worker of jobs delivered before.")
	fmt.Fprintf(bw, "rawbatch_redeliveries_total %d\n", mm.redeliveries)
	head("rawbatch_leases_lost_total", "counter", "Leases this worker lost (fenced conversions).")
	fmt.Fprintf(bw, "rawbatch_leases_lost_total %d\n", mm.leasesLost)
	mm.mu.Unlock()
	head("rawbatch_memory_budget_bytes", "gauge", "This worker's memory budget, bytes.")
	head2 := func(name string, v int64) { fmt.Fprintf(bw, "%s %d\n", name, v) }
	var bud, use int64
	if mm.s != nil {
		bud, use = mm.s.Budget(), mm.s.InUse()
	}
	head2("rawbatch_memory_budget_bytes", bud)
	head("rawbatch_memory_in_use_bytes", "gauge", "Bytes of the budget the running conversions hold.")
	head2("rawbatch_memory_in_use_bytes", use)
	if err := bw.Flush(); err != nil {
		return err
	}
	return qerr
}

// Handler returns the HTTP handler of /metrics.
func (m *Metrics) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
		defer cancel()
		_ = m.WriteText(ctx, w) // a broker away leaves the queue gauges out
	})
}

func (m *Metrics) serve(ctx context.Context, addr string) error {
	mux := http.NewServeMux()
	mux.Handle("/metrics", m.Handler())
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("queue: metrics on %s: %w", addr, err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	stop := context.AfterFunc(ctx, func() {
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	})
	defer stop()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("queue: metrics on %s: %w", addr, err)
	}
	return nil
}
