package queue

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/expfmt"

	"github.com/rawbatch/rawbatch/budget"
)

// stageBuckets are the upper bounds in seconds of rawbatch_stage_seconds.
var stageBuckets = []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

// fileResults are the values of rawbatch_files_total's result label.
var fileResults = []string{"converted", "up_to_date", "failed", "retried", "fenced"}

// scrapeTimeout bounds the broker calls of one scrape (the queue's gauges).
const scrapeTimeout = 3 * time.Second

// metrics are a worker's collectors, in a registry of their own (not the
// process-wide default one: each Metrics, and each test, is separate),
// with the Go runtime's and the process's (process_cpu_seconds_total,
// process_resident_memory_bytes, ...).
type metrics struct {
	reg          *prometheus.Registry
	files        *prometheus.CounterVec
	redeliveries prometheus.Counter
	leasesLost   prometheus.Counter
	inFlight     prometheus.Gauge
	stages       *prometheus.HistogramVec
	queue        *queueCollector
}

func newMetrics(c *Client, s *budget.Scheduler) *Metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		files: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rawbatch_files_total",
			Help: "Deliveries this worker ended, by result."}, []string{"result"}),
		redeliveries: prometheus.NewCounter(prometheus.CounterOpts{Name: "rawbatch_redeliveries_total",
			Help: "Deliveries to this worker of jobs delivered before."}),
		leasesLost: prometheus.NewCounter(prometheus.CounterOpts{Name: "rawbatch_leases_lost_total",
			Help: "Leases this worker lost (fenced conversions)."}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{Name: "rawbatch_jobs_inflight",
			Help: "Jobs this worker is running."}),
		stages: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "rawbatch_stage_seconds",
			Help: "Seconds spent in each stage of the files this worker converted.", Buckets: stageBuckets}, []string{"stage"}),
		queue: newQueueCollector(c),
	}
	for _, r := range fileResults {
		m.files.WithLabelValues(r) // every result shown, 0 until counted
	}
	budgetBytes := func() float64 {
		if s == nil {
			return 0
		}
		return float64(s.Budget())
	}
	inUse := func() float64 {
		if s == nil {
			return 0
		}
		return float64(s.InUse())
	}
	m.reg.MustRegister(m.files, m.redeliveries, m.leasesLost, m.inFlight, m.stages, m.queue,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "rawbatch_memory_budget_bytes", Help: "This worker's memory budget, bytes."}, budgetBytes),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "rawbatch_memory_in_use_bytes", Help: "Bytes of the budget the running conversions hold."}, inUse),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		collectors.NewGoCollector())
	return &Metrics{m: m}
}

func (m *Metrics) file(result string) { m.m.files.WithLabelValues(result).Inc() }

func (m *Metrics) redelivered() { m.m.redeliveries.Inc() }

func (m *Metrics) leaseLost() { m.m.leasesLost.Inc() }

func (m *Metrics) inflight(d int) { m.m.inFlight.Add(float64(d)) }

// done counts a Done outcome and its stages.
func (m *Metrics) done(o Outcome) {
	r := "up_to_date"
	if o.Converted {
		r = "converted"
	}
	m.m.files.WithLabelValues(r).Inc()
	for stage, sec := range o.Stages {
		m.m.stages.WithLabelValues(stage).Observe(sec)
	}
}

// queueCollector collects the queue's gauges (rawbatch_queue_depth per
// class, rawbatch_oldest_job_age_seconds, rawbatch_dead_jobs) from the
// broker at each scrape; when the broker does not answer within
// scrapeTimeout they have no sample, and the error is kept for WriteText.
type queueCollector struct {
	c                   *Client
	depth, oldest, dead *prometheus.Desc

	mu      sync.Mutex
	lastErr error
}

func newQueueCollector(c *Client) *queueCollector {
	return &queueCollector{c: c,
		depth:  prometheus.NewDesc("rawbatch_queue_depth", "Jobs waiting in the queue, per size class.", []string{"class"}, nil),
		oldest: prometheus.NewDesc("rawbatch_oldest_job_age_seconds", "Age of the oldest job in the queue, seconds (0: none).", nil, nil),
		dead:   prometheus.NewDesc("rawbatch_dead_jobs", "Jobs in the dead letters.", nil, nil),
	}
}

func (q *queueCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- q.depth
	ch <- q.oldest
	ch <- q.dead
}

func (q *queueCollector) Collect(ch chan<- prometheus.Metric) {
	var qi QueueInfo
	err := errors.New("queue: metrics without a client")
	if q.c != nil {
		ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
		qi, err = q.c.info(ctx)
		cancel()
	}
	q.mu.Lock()
	q.lastErr = err
	q.mu.Unlock()
	if err != nil {
		return
	}
	for _, class := range allClasses() {
		ch <- prometheus.MustNewConstMetric(q.depth, prometheus.GaugeValue, float64(qi.Depth[class]), class)
	}
	ch <- prometheus.MustNewConstMetric(q.oldest, prometheus.GaugeValue, qi.Oldest)
	ch <- prometheus.MustNewConstMetric(q.dead, prometheus.GaugeValue, float64(qi.Dead))
}

// WriteText writes the metrics in Prometheus' text exposition format to
// w, as the library encodes them. The queue's gauges are read from the
// broker (within scrapeTimeout); when it does not answer they have no
// sample and the error is returned after everything else was written.
func (m *Metrics) WriteText(_ context.Context, w io.Writer) error {
	mfs, err := m.m.reg.Gather()
	if err != nil {
		return fmt.Errorf("queue: metrics: %w", err)
	}
	enc := expfmt.NewEncoder(w, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			return err
		}
	}
	m.m.queue.mu.Lock()
	defer m.m.queue.mu.Unlock()
	return m.m.queue.lastErr
}

// Handler returns the HTTP handler of /metrics (the library's: its
// content negotiation and compression); a broker away leaves the queue's
// gauges out.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

func (m *Metrics) serve(ctx context.Context, addr string) error {
	mux := http.NewServeMux()
	mux.Handle("/metrics", m.Handler())
	return serveHTTP(ctx, "metrics", addr, mux)
}

// serveHTTP serves h on addr until ctx ends; what names the endpoint in
// errors.
func serveHTTP(ctx context.Context, what, addr string, h http.Handler) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("queue: %s on %s: %w", what, addr, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	stop := context.AfterFunc(ctx, func() {
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	})
	defer stop()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("queue: %s on %s: %w", what, addr, err)
	}
	return nil
}
