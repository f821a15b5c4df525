package runtime

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/handler"
	"github.com/runbookdev/runbook/rbtype"
)

// Metrics are the runtime's Prometheus metrics (docs/design/daemon.md, "Operating it").
// The zero value of *Metrics (nil) records nothing.
type Metrics struct {
	stepsStarted    *prometheus.CounterVec
	stepsCompleted  *prometheus.CounterVec
	stepsFailed     *prometheus.CounterVec
	stepDuration    *prometheus.HistogramVec
	resumeLatency   prometheus.Histogram
	resumesInPlace  prometheus.Counter
	resumesHandedOn *prometheus.CounterVec
	inlineSteps     *prometheus.CounterVec
	leaseReclaims   prometheus.Counter
	outcomesDropped prometheus.Counter
	listenLost      prometheus.Counter
	advanceLatency  prometheus.Histogram
	parked          prometheus.Gauge
	inboxDepth      prometheus.Gauge
	sweepDuration   *prometheus.HistogramVec
	orphanCount     prometheus.Gauge
	orphansPruned   prometheus.Counter
	pruned          *prometheus.CounterVec
	cacheLookups    *prometheus.CounterVec
	costUSD         *prometheus.CounterVec
	tokens          *prometheus.CounterVec
	budgetExceeds   *prometheus.CounterVec
	planCacheBytes  prometheus.Gauge
	planCachePlans  prometheus.Gauge
}

// NewMetrics creates the metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		stepsStarted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rbd_steps_started_total", Help: "Handler calls started, by verb.",
		}, []string{"verb"}),
		stepsCompleted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rbd_steps_completed_total", Help: "Handler calls that completed or parked, by verb.",
		}, []string{"verb"}),
		stepsFailed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rbd_steps_failed_total", Help: "Handler calls that failed, by verb and error code.",
		}, []string{"verb", "code"}),
		stepDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "rbd_step_duration_seconds", Help: "Handler call duration, by verb.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 18),
		}, []string{"verb"}),
		resumeLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "rbd_notification_resume_latency_seconds", Help: "From a notification's arrival to its step's resumption.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 18),
		}),
		resumesHandedOn: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rbd_resumes_handed_on_total",
			Help: "Notifications for an active wait whose runbook was not resumed in the notification's own transaction, by why: " +
				"no_worker (this rbd runs none), busy (every in-place place taken), failed (the resume could not be written).",
		}, []string{"why"}),
		resumesInPlace: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "rbd_resumes_in_place_total",
			Help: "Notifications whose runbook was resumed in the notification's own transaction, without a wake-up.",
		}),
		inlineSteps: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rbd_steps_inline_total",
			Help: "Steps of pure, side-effect-free verbs called inside the advance that started them, without a lease (also counted in rbd_steps_started_total).",
		}, []string{"verb"}),
		leaseReclaims: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "rbd_lease_reclaims_total", Help: "Running steps taken back after their worker's lease expired or was released.",
		}),
		outcomesDropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "rbd_outcomes_dropped_total", Help: "Call outcomes not recorded because the lease was lost meanwhile.",
		}),
		listenLost: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "rbd_listener_reconnects_total",
			Help: "Times the connection that LISTENs for wake-ups was lost and connected again (a restart or failover of the database), each followed by a sweep.",
		}),
		advanceLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "rbd_advance_duration_seconds", Help: "Duration of one advance transaction.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}),
		parked: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "rbd_parked_invocations", Help: "Durable steps waiting for a notification or a timer.",
		}),
		inboxDepth: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "rbd_inbox_depth", Help: "Notifications received and not yet processed.",
		}),
		sweepDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "rbd_sweep_duration_seconds", Help: "Duration of each sweep's query, by sweep (inbox, ignore, timeouts, retries).",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 18),
		}, []string{"sweep"}),
		orphanCount: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "rbd_orphan_notifications", Help: "Notifications received for keys that no step has parked with.",
		}),
		pruned: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rbd_pruned_total", Help: "Rows the retention sweep deleted (--retention), by kind.",
		}, []string{"kind"}),
		orphansPruned: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "rbd_orphan_notifications_pruned_total", Help: "Orphan notifications deleted after --orphan-notification-ttl.",
		}),
		cacheLookups: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rbd_cache_lookups_total", Help: "Result cache lookups before a handler call, by verb and result (hit, miss).",
		}, []string{"verb", "result"}),
		costUSD: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rbd_cost_usd_total", Help: "Cost in USD that attempts reported, by verb.",
		}, []string{"verb"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rbd_tokens_total", Help: "Tokens that attempts reported, by verb and direction (in, out).",
		}, []string{"verb", "direction"}),
		budgetExceeds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rbd_budget_exceeded_total", Help: "Steps that did not start because a budget was spent, by budget (runbook, day, month).",
		}, []string{"budget"}),
		planCacheBytes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "rbd_plan_cache_bytes", Help: "What the decoded plans kept weigh, as --plan-cache-bytes counts them.",
		}),
		planCachePlans: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "rbd_plan_cache_plans", Help: "Decoded plans kept.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.stepsStarted, m.stepsCompleted, m.stepsFailed, m.stepDuration, m.resumeLatency,
			m.resumesInPlace, m.resumesHandedOn, m.inlineSteps, m.leaseReclaims, m.outcomesDropped, m.listenLost, m.advanceLatency, m.parked, m.inboxDepth, m.sweepDuration,
			m.orphanCount, m.orphansPruned, m.pruned, m.cacheLookups, m.costUSD, m.tokens, m.budgetExceeds, m.planCacheBytes, m.planCachePlans)
	}
	return m
}

func (m *Metrics) planCacheSize(bytes int64, plans int) {
	if m != nil {
		m.planCacheBytes.Set(float64(bytes))
		m.planCachePlans.Set(float64(plans))
	}
}

func (m *Metrics) callStarted(verb string) {
	if m != nil {
		m.stepsStarted.WithLabelValues(verb).Inc()
	}
}

func (m *Metrics) callFinished(verb string, took time.Duration, err *handler.Error) {
	if m == nil {
		return
	}
	m.stepDuration.WithLabelValues(verb).Observe(took.Seconds())
	if err != nil {
		m.stepsFailed.WithLabelValues(verb, string(err.Code)).Inc()
	} else {
		m.stepsCompleted.WithLabelValues(verb).Inc()
	}
}

// Resumed counts a parked step resumed this long after its notification.
func (m *Metrics) Resumed(latency time.Duration) {
	if m != nil {
		m.resumeLatency.Observe(latency.Seconds())
	}
}

// CacheLookup counts a result cache look-up of a verb, hit or missed.
func (m *Metrics) CacheLookup(verb string, hit bool) {
	if m != nil {
		result := "miss"
		if hit {
			result = "hit"
		}
		m.cacheLookups.WithLabelValues(verb, result).Inc()
	}
}

// Used adds what an attempt of a verb used to the usage counters.
func (m *Metrics) Used(verb string, u driver.Usage) {
	if m == nil {
		return
	}
	if u.CostUSD > 0 {
		m.costUSD.WithLabelValues(verb).Add(u.CostUSD)
	}
	if u.TokensIn > 0 {
		m.tokens.WithLabelValues(verb, "in").Add(float64(u.TokensIn))
	}
	if u.TokensOut > 0 {
		m.tokens.WithLabelValues(verb, "out").Add(float64(u.TokensOut))
	}
}

// BudgetExceeded counts a step that did not start for a spent budget.
func (m *Metrics) BudgetExceeded(scope rbtype.BudgetScope) {
	if m != nil {
		m.budgetExceeds.WithLabelValues(string(scope)).Inc()
	}
}

func (m *Metrics) inlineStep(verb string) {
	if m != nil {
		m.inlineSteps.WithLabelValues(verb).Inc()
	}
}

// handedOn counts a notification's resume left to the advancers, and why.
func (m *Metrics) handedOn(why string) {
	if m != nil {
		m.resumesHandedOn.WithLabelValues(why).Inc()
	}
}

func (m *Metrics) resumedInPlace() {
	if m != nil {
		m.resumesInPlace.Inc()
	}
}

// LeaseReclaimed counts a running step whose lease was found expired.
func (m *Metrics) LeaseReclaimed() {
	if m != nil {
		m.leaseReclaims.Inc()
	}
}

func (m *Metrics) outcomeDropped() {
	if m != nil {
		m.outcomesDropped.Inc()
	}
}

// listenerReconnected counts a lost LISTEN connection connected again.
func (m *Metrics) listenerReconnected() {
	if m != nil {
		m.listenLost.Inc()
	}
}

func (m *Metrics) advanced(took time.Duration) {
	if m != nil {
		m.advanceLatency.Observe(took.Seconds())
	}
}

func (m *Metrics) gauges(parked, inbox int64) {
	if m != nil {
		m.parked.Set(float64(parked))
		m.inboxDepth.Set(float64(inbox))
	}
}

// prunedRows counts what a retention batch deleted.
func (m *Metrics) prunedRows(p driver.Pruned) {
	if m == nil {
		return
	}
	for kind, n := range map[string]int64{"runbooks": p.Runbooks, "steps": p.Steps, "edges": p.Edges, "events": p.Events,
		"invocations": p.Invocations, "notifications": p.Notifications, "mutations": p.Mutations, "receipts": p.Receipts,
		"ledger_rows": p.Attempts} {
		m.pruned.WithLabelValues(kind).Add(float64(n))
	}
}

func (m *Metrics) orphans(pruned, left int64) {
	if m != nil {
		m.orphansPruned.Add(float64(pruned))
		m.orphanCount.Set(float64(left))
	}
}

func (m *Metrics) swept(took map[string]time.Duration) {
	if m != nil {
		for name, d := range took {
			m.sweepDuration.WithLabelValues(name).Observe(d.Seconds())
		}
	}
}
