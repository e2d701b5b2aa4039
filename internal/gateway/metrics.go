package gateway

import (
	"regexp"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spillway/spillway/policy"
)

// metrics are the gateway's Prometheus series, on a registry of its own.
type metrics struct {
	reg       *prometheus.Registry
	requests  *prometheus.CounterVec   // endpoint, outcome
	attempts  *prometheus.CounterVec   // model, class
	deployed  *prometheus.CounterVec   // model, deployment, class: models with deployments
	fallbacks *prometheus.CounterVec   // from, to, class
	latency   *prometheus.HistogramVec // endpoint
	ttfb      *prometheus.HistogramVec // model
	inflight  prometheus.Gauge
	breaker   *prometheus.GaugeVec // key: 0 closed, 1 half-open, 2 open
	dropped   prometheus.CounterFunc
	given     prometheus.CounterFunc
	// connsRefused counts connections closed at once past a cap (why:
	// total, per_address)
	connsRefused *prometheus.CounterVec
}

func newMetrics(dropped, given func() float64, fleet Fleet) *metrics {
	reg := prometheus.NewRegistry()
	m := &metrics{
		reg: reg,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "spillway_requests_total",
			Help: "Client requests by endpoint and outcome (ok, failed class)."}, []string{"endpoint", "outcome"}),
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "spillway_attempts_total",
			Help: "Upstream attempts by model and class."}, []string{"model", "class"}),
		deployed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "spillway_deployment_attempts_total",
			Help: "Upstream attempts to the models served by several deployments, by model, deployment and class."}, []string{"model", "deployment", "class"}),
		fallbacks: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "spillway_fallbacks_total",
			Help: "Model switches by from, to and the class that caused them."}, []string{"from", "to", "class"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "spillway_request_duration_seconds",
			Help: "Client request duration, all attempts and waits included.", Buckets: prometheus.ExponentialBuckets(0.005, 2.5, 12)}, []string{"endpoint"}),
		ttfb: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "spillway_upstream_ttfb_seconds",
			Help: "Time to the upstream's response headers, per attempt.", Buckets: prometheus.ExponentialBuckets(0.002, 2.5, 12)}, []string{"model"}),
		inflight: prometheus.NewGauge(prometheus.GaugeOpts{Name: "spillway_inflight_requests", Help: "Client requests in progress."}),
		breaker: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "spillway_breaker_state",
			Help: "Breaker state per provider/model: 0 closed, 1 half-open, 2 open."}, []string{"key"}),
		connsRefused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "spillway_connections_refused_total",
			Help: "Connections closed as soon as they were accepted, past gateway.max_connections (why: total) or max_connections_per_address (why: per_address); beyond loopback only."}, []string{"why"}),
	}
	m.dropped = prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "spillway_events_dropped_total",
		Help: "Event records that never reached the event log: its disk full, a write or open that failed, or a writer that fell behind (the log says which, at once and then once a minute)."}, dropped)
	m.given = prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "spillway_memory_given_back_total",
		Help: "Times the gateway gave its free memory back to the system, each after 30 s with no request in flight."}, given)
	// go_gc_heap_live_bytes (the heap the last collection found in use)
	// besides the default series: what the gateway holds, where the
	// heap's size and RSS follow the collector's target and high-water mark
	goc := collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(collectors.GoRuntimeMetricsRule{Matcher: regexp.MustCompile(`^/gc/heap/live:bytes$`)}))
	reg.MustRegister(m.requests, m.attempts, m.deployed, m.fallbacks, m.latency, m.ttfb, m.inflight, m.breaker, m.dropped, m.given, m.connsRefused,
		goc, collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if fleet != nil {
		reg.MustRegister(
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "spillway_fleet_degraded",
				Help: "1 while the fleet's shared state (Redis) is unreachable and this process goes on with its own."},
				func() float64 {
					if fleet.Degraded() {
						return 1
					}
					return 0
				}),
			prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "spillway_fleet_evidence_sent_total",
				Help: "Capacity evidence (capacity, timeouts, rate limits, probe answers) this process shared with the fleet."},
				func() float64 { return float64(fleet.Sent()) }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "spillway_fleet_evidence_received_total",
				Help: "Capacity evidence heard from the other processes of the fleet."},
				func() float64 { return float64(fleet.Received()) }))
	}
	return m
}

func breakerValue(state policy.BreakerState) float64 {
	switch state {
	case policy.StateOpen:
		return 2
	case policy.StateHalfOpen:
		return 1
	}
	return 0
}
