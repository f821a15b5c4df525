package compiler

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// parallelRanges runs fn over [0, n) in chunks on GOMAXPROCS goroutines,
// so that small plans pay nothing for it and a chunk can reuse scratch
// memory.
func parallelRanges(n int, fn func(lo, hi int)) {
	const chunk = 512
	workers := runtime.GOMAXPROCS(0)
	if workers == 1 || n <= chunk {
		fn(0, n)
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				from := int(next.Add(chunk)) - chunk
				if from >= n {
					return
				}
				fn(from, min(from+chunk, n))
			}
		})
	}
	wg.Wait()
}
