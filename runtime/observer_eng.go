package runtime

// observerOf is the observer of an engine's metrics; nil metrics observe
// nothing.
func observerOf(m *Metrics) observer {
	if m == nil {
		return noObserver{}
	}
	return m
}
