package runtime

import (
	"fmt"
	"sync"
	"sync/atomic"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/runbookdev/runbook/compiler"
	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/machine"
)

// planCache keeps decoded plans by their hash. Runbooks submitted from one
// plan share its entry, so a worker advancing a thousand of them fetches
// and decodes the plan once; an extension changes a runbook's plan and so
// its hash. The hash is trusted because it was computed by the compiler,
// or checked against the plan's content, every step's own execution block
// included, when the plan came in (compiler.ReadPlan). The cache is
// bounded in number (a daemon with 100k parked runbooks of many plans does
// not hold them all) and in bytes (one large plan once took 430 MB, and a
// thousand of them would have been kept): a decoded plan is counted as
// planWeight times its stored JSON, and a plan larger than the whole
// budget is decoded each time it is needed and never kept.
type planCache struct {
	lru     *lru.Cache[string, *machine.PlanInfo]
	budget  int64
	metrics *Metrics
	mu      sync.Mutex // orders additions and the evictions they cause
	bytes   atomic.Int64
}

// planWeight is how many bytes of memory a decoded plan takes for each
// byte of its JSON, as kept: its steps decoded (a plan an expansion grew
// keeps their encoding from its seal too) and the machine's index of its
// loops. TestAPlansWeightIsWhatItHolds measures 2.6 to 2.9 for a decoded
// plan of 3,000 steps and 3.7 for one of nested lists (90 of 100), rounded
// up. (It was 2, from 1.9 measured on 5,000 steps without loops: the
// cache could hold nearly twice its budget.)
const planWeight = 4

func newPlanCache(size int, budget int64, metrics *Metrics) *planCache {
	c := &planCache{budget: budget, metrics: metrics}
	l, err := lru.NewWithEvict[string, *machine.PlanInfo](size, func(_ string, p *machine.PlanInfo) { c.bytes.Add(-p.Weight) })
	if err != nil {
		panic(err) // only for a size below one
	}
	c.lru = l
	return c
}

// lookup returns the plan with this hash, if cached.
func (c *planCache) lookup(hash string) (*machine.PlanInfo, bool) {
	return c.lru.Get(hash)
}

// decode decodes a stored plan and caches it under its hash, if it fits.
// Nothing changes a planInfo once it is built, so transitions share it.
func (c *planCache) decode(hash string, raw []byte) (*machine.PlanInfo, error) {
	p, err := compiler.DecodePlan(raw)
	if err != nil {
		return nil, fmt.Errorf("plan %s: %w", hash, err)
	}
	info := machine.NewPlanInfo(p)
	c.keep(hash, info, len(raw))
	return info, nil
}

// keep caches a decoded plan under its hash, weighed by the size of its
// stored form, if it fits: a plan decode read, or one an expansion grew
// and wrote (advance.go).
func (c *planCache) keep(hash string, info *machine.PlanInfo, stored int) {
	info.Weight = int64(stored) * planWeight
	if info.Weight > c.budget {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lru.Contains(hash) {
		return // another advance decoded it meanwhile
	}
	c.bytes.Add(info.Weight)
	c.lru.Add(hash, info)
	for c.bytes.Load() > c.budget {
		if _, _, ok := c.lru.RemoveOldest(); !ok {
			break
		}
	}
	c.metrics.planCacheSize(c.size())
}

// size is what the cached plans weigh, in bytes, and how many there are.
func (c *planCache) size() (bytes int64, plans int) { return c.bytes.Load(), c.lru.Len() }

// dataCache keeps the resolved arguments and results of steps, by runbook
// and key. Both are written once and never change, so a worker keeps what
// it recorded and fetches only what another worker did.
type dataCache struct {
	lru *lru.Cache[driver.StepKey, driver.StepData]
}

func newDataCache(size int) *dataCache {
	c, err := lru.New[driver.StepKey, driver.StepData](size)
	if err != nil {
		panic(err) // only for a size below one
	}
	return &dataCache{lru: c}
}

// remember adds what is known of a step to what was known before: the
// arguments are set when a step starts and the result when it completes,
// often in different transactions that each hold only one of them.
func (c *dataCache) remember(k driver.StepKey, d driver.StepData) {
	if old, ok := c.lru.Get(k); ok {
		if d.ResolvedArgs == nil {
			d.ResolvedArgs = old.ResolvedArgs
		}
		if d.Result == nil {
			d.Result = old.Result
		}
	}
	c.lru.Add(k, d)
}

// DefaultPlanCacheBytes bounds the decoded plans a worker keeps (64 MiB).
const DefaultPlanCacheBytes = 64 << 20
