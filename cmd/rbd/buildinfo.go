package main

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/runbookdev/runbook/cmd/internal/cli"
)

// newBuildInfoGauge exports which code the daemon runs as
// rbd_build_info{version, revision, go_version} 1, the convention of
// Prometheus' own *_build_info metrics: a dashboard joins it to other
// series to tell a rollout's old daemons from its new ones.
func newBuildInfoGauge(b cli.Build) prometheus.Gauge {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "rbd_build_info",
		Help: "Always 1; its labels say which code this rbd was built from (rbd --version prints the same version).",
		ConstLabels: prometheus.Labels{
			"version": b.Version, "revision": b.Revision, "go_version": b.GoVersion,
		},
	})
	g.Set(1)
	return g
}
