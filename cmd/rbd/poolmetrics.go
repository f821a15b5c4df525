package main

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/runbookdev/runbook/durable"
)

// poolCollector exports the store's connection pool as rbd_db_* metrics,
// read once a scrape. docs/scaling.md says how to size the pool from
// them.
type poolCollector struct {
	stats                                    func() durable.PoolStats
	acquires, waits, waitSeconds, conns, max *prometheus.Desc
}

func newPoolCollector(stats func() durable.PoolStats) *poolCollector {
	return &poolCollector{
		stats:    stats,
		acquires: prometheus.NewDesc("rbd_db_acquires_total", "Connections taken from the database pool.", nil, nil),
		waits: prometheus.NewDesc("rbd_db_acquire_waits_total",
			"Takes from the database pool that found every connection in use and waited.", nil, nil),
		waitSeconds: prometheus.NewDesc("rbd_db_acquire_wait_seconds_total",
			"Time spent waiting for a connection from the database pool.", nil, nil),
		conns: prometheus.NewDesc("rbd_db_connections", "Connections of the database pool, by state (in_use, idle).",
			[]string{"state"}, nil),
		max: prometheus.NewDesc("rbd_db_max_connections", "The database pool's size (--db-max-conns).", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *poolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.acquires, c.waits, c.waitSeconds, c.conns, c.max} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *poolCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	ch <- prometheus.MustNewConstMetric(c.acquires, prometheus.CounterValue, float64(s.Acquires))
	ch <- prometheus.MustNewConstMetric(c.waits, prometheus.CounterValue, float64(s.Waited))
	ch <- prometheus.MustNewConstMetric(c.waitSeconds, prometheus.CounterValue, s.WaitTime.Seconds())
	ch <- prometheus.MustNewConstMetric(c.conns, prometheus.GaugeValue, float64(s.InUse), "in_use")
	ch <- prometheus.MustNewConstMetric(c.conns, prometheus.GaugeValue, float64(s.Idle), "idle")
	ch <- prometheus.MustNewConstMetric(c.max, prometheus.GaugeValue, float64(s.Max))
}
