package main

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/runbookdev/runbook/durable"
)

// checkReplication refuses to start on a primary whose standbys its
// commits do not wait for, unless the operator allowed it: a failover to
// such a standby could lose notifications rbd answered 202 for
// (docs/scaling.md, "Durable acknowledgements"). It reports whether rbd
// runs so, which /metrics shows.
func checkReplication(ctx context.Context, store *durable.Store, allowAsync bool, log *slog.Logger) (async bool, err error) {
	r, err := store.CheckReplication(ctx)
	var asyncErr *durable.AsyncReplicationError
	switch {
	case errors.As(err, &asyncErr) && allowAsync:
		log.Warn("--allow-async-replication: the database primary has standbys its commits do not wait for; "+
			"a failover may lose what rbd acknowledged", "standbys", r.Standbys,
			"synchronous_standby_names", r.SynchronousStandbyNames, "synchronous_commit", r.SynchronousCommit)
		return true, nil
	case err != nil:
		return false, err
	case r.Standbys > 0:
		log.Info("the database primary commits synchronously to a standby", "standbys", r.Standbys,
			"synchronous_standby_names", r.SynchronousStandbyNames, "synchronous_commit", r.SynchronousCommit)
	}
	return false, nil
}

// primaryWatch asks the database every second whether rbd reaches a
// primary, so that the loss of one (a failover, a restart) is logged
// once when it happens and once when it ends, and counted in /metrics,
// however many requests and transactions fail meanwhile
// (docs/scaling.md, "Across a failover").
type primaryWatch struct {
	check func(context.Context) error
	log   *slog.Logger
	every time.Duration

	up, async prometheus.Gauge
	lost      prometheus.Counter
	downFor   prometheus.Counter

	downSince time.Time // zero while the primary answers
}

func newPrimaryWatch(check func(context.Context) error, log *slog.Logger, reg prometheus.Registerer, async bool) *primaryWatch {
	w := &primaryWatch{
		check: check, log: log, every: time.Second,
		up: prometheus.NewGauge(prometheus.GaugeOpts{Name: "rbd_db_primary_up",
			Help: "1 while the database rbd reaches is a primary that answers, 0 while there is none (a failover or a restart); /readyz answers 503 meanwhile."}),
		lost: prometheus.NewCounter(prometheus.CounterOpts{Name: "rbd_db_primary_lost_total",
			Help: "Times rbd lost its database primary (a failover, a restart, an outage)."}),
		downFor: prometheus.NewCounter(prometheus.CounterOpts{Name: "rbd_db_primary_down_seconds_total",
			Help: "Time without a primary, summed over every loss that has ended, as seen by one look a second."}),
		async: prometheus.NewGauge(prometheus.GaugeOpts{Name: "rbd_db_async_replication",
			Help: "1 when rbd runs, by --allow-async-replication, on a primary whose standbys its commits do not wait for: a failover may lose acknowledged notifications."}),
	}
	w.up.Set(1)
	if async {
		w.async.Set(1)
	}
	reg.MustRegister(w.up, w.lost, w.downFor, w.async)
	return w
}

// run looks until ctx ends.
func (w *primaryWatch) run(ctx context.Context) {
	t := time.NewTicker(w.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		checkCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := w.check(checkCtx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		w.observe(err, time.Now())
	}
}

// observe records one look: err is nil when a primary answered.
func (w *primaryWatch) observe(err error, now time.Time) {
	switch {
	case err != nil && w.downSince.IsZero():
		w.downSince = now
		w.up.Set(0)
		w.lost.Inc()
		w.log.Warn("lost the database primary: transactions are retried and /readyz answers 503 until one answers", "err", err)
	case err == nil && !w.downSince.IsZero():
		down := now.Sub(w.downSince)
		w.downFor.Add(down.Seconds())
		w.log.Info("the database primary answers again", "down_for", down.Round(time.Millisecond).String())
		w.downSince = time.Time{}
		w.up.Set(1)
	}
}
