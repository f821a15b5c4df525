package compiler

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// parallel runs fn(0..n-1) on GOMAXPROCS goroutines, in chunks, so small
// plans pay nothing for it.
func parallel(n int, fn func(int)) {
	const chunk = 512
	workers := runtime.GOMAXPROCS(0)
	if workers == 1 || n <= chunk {
		for i := range n {
			fn(i)
		}
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
				for i := from; i < min(from+chunk, n); i++ {
					fn(i)
				}
			}
		})
	}
	wg.Wait()
}
