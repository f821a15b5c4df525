package runtime

import "github.com/runbookdev/runbook/machine"

// observerOf is the observer of an engine's metrics; nil metrics observe
// nothing.
func observerOf(m *Metrics) machine.Observer {
	if m == nil {
		return machine.NoObserver{}
	}
	return m
}
