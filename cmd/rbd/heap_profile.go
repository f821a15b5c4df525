package main

import (
	"os"
	"runtime/metrics"
	"runtime/pprof"
	"time"
)

// startHeapProfile writes, when path is set (RBD_HEAPPROFILE), a heap
// profile of the daemon each time the heap found live by a collection
// reaches a new high, by a margin: at the stop, path holds the heap as it
// stood at its largest, which is what the peak of the daemon's memory is
// made of (a profile taken at the end shows only what was left). It
// looks every 100 ms; it is a tool for finding where memory goes, off
// unless asked for.
func startHeapProfile(path string) (stop func()) {
	if path == "" {
		return func() {}
	}
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		var highest uint64
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			metrics.Read(sample)
			if sample[0].Value.Kind() != metrics.KindUint64 {
				return
			}
			live := sample[0].Value.Uint64()
			if live < highest+highest/20+(1<<20) {
				continue
			}
			highest = live
			if f, err := os.Create(path); err == nil {
				_ = pprof.Lookup("heap").WriteTo(f, 0)
				f.Close()
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}
