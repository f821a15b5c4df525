package runtime

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/trace"

	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/handler"
	"github.com/runbookdev/runbook/machine"
	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/registry"
	"github.com/runbookdev/runbook/registry/policy"
)

// Config tunes an Engine. Zero values take the defaults shown.
type Config struct {
	// ReadStore, when set, serves the reads of a request whose context
	// WithReplica marked: a standby's copy (rbd serve
	// --read-database-url; docs/scaling.md, "Reads from a standby").
	ReadStore driver.Store
	// WorkerID names this worker in leases and events; default
	// host-pid-random.
	WorkerID string
	// LeaseTTL is how long a lease lasts without renewal (30s). A worker
	// renews its leases every third of it while calls run; a dead worker's
	// steps are reclaimed this long after it died.
	LeaseTTL time.Duration
	// Advancers is the number of transactions run at once (2).
	Advancers int
	// BatchSize is the most runbooks one transaction advances (64).
	BatchSize int
	// ClaimBatch is the most due runbooks claimed at once (256).
	ClaimBatch int
	// MaxCalls bounds the handler calls in flight (512).
	MaxCalls int
	// PollInterval is how often the worker looks for due runbooks when no
	// wake-up arrives (1s): the fallback under LISTEN/NOTIFY.
	PollInterval time.Duration
	// SweepInterval is how often the tables are swept for what wake-ups
	// missed (5s).
	SweepInterval time.Duration
	// OrphanNotificationTTL is how long a notification for a key that no
	// step has parked with is kept for the step that may yet park with it
	// (30 days); the sweep deletes it after. Negative keeps them forever.
	OrphanNotificationTTL time.Duration
	// Retention, when positive, has the sweep delete the runbooks that
	// finished longer ago than this, a batch each sweep, with their rows
	// (rbd serve --retention; rbd prune does the same by hand). Zero
	// keeps every runbook.
	Retention time.Duration
	// ReceiptWindow and LedgerRetention are how long receipts of pruned
	// runbooks and ledger rows outlive them (driver.PruneOptions); zero
	// keeps them. Used only with Retention.
	ReceiptWindow, LedgerRetention time.Duration
	// ShutdownGrace is how long running calls may finish after Run's
	// context ends (10s).
	ShutdownGrace time.Duration
	// CallbackURL is where durable handlers tell external systems to send
	// notifications.
	CallbackURL string
	// PlanCacheSize is the number of decoded plans kept (1024).
	PlanCacheSize int
	// DataCacheSize is the number of steps whose arguments and results are
	// kept (65536).
	DataCacheSize int
	// Clock is the time an advance decides by: retry delays, park and
	// cache expiries (time.Now). Tests move it; the database's own clock
	// still decides what is due.
	Clock func() time.Time
	// ScheduleGrace is how late a schedule's tick may be fired and still
	// count as on time (1m, and at least twice SweepInterval): a tick
	// older than that was missed while no daemon ran, and fires only under
	// catch_up: latest.
	ScheduleGrace time.Duration
	// MaxFanout bounds the elements of a for-each's list known only at run
	// time (DefaultMaxFanout, 1,000): a longer list fails the step that
	// produced it with FANOUT_TOO_LARGE, and nothing is expanded (rbd serve
	// --max-fanout; docs/design/language.md v1.3). Lists written out are
	// held to it when sources are compiled here.
	MaxFanout int
	// Catalogue compiles submitted and extension sources.
	Catalogue *registry.Catalogue
	// Policy returns the policy in force (rbd serve --policy, which SIGHUP
	// reloads); nil, or a nil policy, is the built-in one
	// (docs/design/semantics.md sections 10 and 11). It is read when a
	// plan is admitted, and for the budgets before each attempt.
	Policy func() *policy.Policy
	// Limits bound what one runbook may hold (limits.go).
	Limits machine.Limits
	// TokenScope says what the API token whose fingerprint is given
	// (Scope.Token) may do now: its scope, and false when the daemon no
	// longer accepts it or it may no longer submit. A schedule's tick is
	// admitted under it, so that a schedule does nothing its maker could
	// not do at that moment (schedule_guard.go). Nil (an open daemon, or
	// tests) keeps the scope the schedule was made with.
	TokenScope func(token string) (Scope, bool)
	// MaxSchedulesPerTenant bounds a tenant's schedules
	// (DefaultMaxSchedulesPerTenant), and MinScheduleInterval the time
	// between two ticks of one (DefaultMinScheduleInterval): rbd serve
	// --max-schedules-per-tenant, --min-schedule-interval.
	MaxSchedulesPerTenant int
	MinScheduleInterval   time.Duration
	// PlanCacheBytes bounds the memory the decoded plans kept take (64
	// MiB; planCache says how it is counted); a plan larger than it is
	// decoded when needed and not kept.
	PlanCacheBytes int64
	Logger         *slog.Logger
	Metrics        *Metrics
	// TracerProvider receives the spans of runbooks and step attempts
	// (docs/design/semantics.md section 2). It should give each span the ids that
	// tracing.ContextWithIDs asks for (an SDK provider with
	// tracing.IDGenerator). Nil, the default, emits no spans; trace ids
	// are still kept, logged and sent.
	TracerProvider trace.TracerProvider
}

func (c *Config) defaults() {
	if c.WorkerID == "" {
		host, _ := os.Hostname()
		var b [3]byte
		_, _ = rand.Read(b[:])
		c.WorkerID = fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
	}
	def := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	defInt := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&c.LeaseTTL, 30*time.Second)
	def(&c.PollInterval, time.Second)
	def(&c.SweepInterval, 5*time.Second)
	def(&c.ShutdownGrace, 10*time.Second)
	def(&c.ScheduleGrace, max(time.Minute, 2*c.SweepInterval))
	def(&c.MinScheduleInterval, DefaultMinScheduleInterval)
	defInt(&c.MaxSchedulesPerTenant, DefaultMaxSchedulesPerTenant)
	if c.OrphanNotificationTTL == 0 {
		c.OrphanNotificationTTL = 30 * 24 * time.Hour
	}
	defInt(&c.Advancers, 2)
	defInt(&c.BatchSize, 64)
	defInt(&c.ClaimBatch, 256)
	defInt(&c.MaxCalls, 512)
	defInt(&c.PlanCacheSize, 1024)
	if c.PlanCacheBytes <= 0 {
		c.PlanCacheBytes = DefaultPlanCacheBytes
	}
	c.Limits.Defaults()
	defInt(&c.DataCacheSize, 65536)
	defInt(&c.MaxFanout, machine.DefaultMaxFanout)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Clock == nil {
		c.Clock = time.Now
	}
}

// Engine advances runbooks stored in a Store: submitted, notified,
// approved and cancelled through its methods, and worked through by Run.
// Any number of engines may share one database.
type Engine struct {
	store    driver.Store
	handlers *Handlers
	machine  machine.Machine
	cfg      Config
	workerID string
	// scoped are the catalogues token scopes see (catalogueFor).
	scoped  scopedCatalogues
	plans   *planCache
	data    *dataCache
	log     *slog.Logger
	metrics *Metrics

	queue *workQueue
	kick  chan struct{}
	// claimFinds: the last claim found due runbooks, or the claim loop
	// held back while the queue was full; a queue running low then kicks
	// it (New).
	claimFinds atomic.Bool
	sweepNow   chan struct{}
	slots      chan struct{}
	inflight   calls
	draining   atomic.Bool // shutting down: leased calls are not started
	// working holds the context calls run in while Run takes work, and
	// nil otherwise: a notification resumes its runbook in place only
	// when this engine's worker is there to make the calls it leases.
	working atomic.Pointer[context.Context]
	// resumers bounds the notifications resumed in place at once (one per
	// advancer): past that, a notification takes the inbox path, whose
	// advances batch many runbooks into one commit, so that a burst of
	// webhooks is answered at the speed of an insert, not of an advance.
	resumers chan struct{}
	// retryLines and giveUpLines write the warnings of an outage once in
	// a while rather than once a work item (loglimit.go).
	retryLines, giveUpLines *lineLimit
	running                 sync.Map // step id → *pendingCall, for lease renewal
	// notifier tells other daemons' workers about work this engine made
	// due while its own worker does not run here (wakeUp).
	notifier *notifier
	// keys derives runbook ids and correlation keys (keys.go); read from
	// the database by the first transaction that needs it.
	keys atomic.Pointer[machine.Derivation]
}

// derivationIn returns the derivation under the database's key, reading
// the key in tx the first time: a second connection, taken while tx holds
// one, could wait for ever on a pool that transactions like it hold.
func (e *Engine) derivationIn(ctx context.Context, tx driver.Tx) (*machine.Derivation, error) {
	if d := e.keys.Load(); d != nil {
		return d, nil
	}
	key, err := tx.DerivationKey(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the derivation key: %w", err)
	}
	d, err := machine.NewDerivation(key)
	if err != nil {
		return nil, err
	}
	e.keys.CompareAndSwap(nil, d)
	return e.keys.Load(), nil
}

// calls counts the handler calls in flight. Unlike a WaitGroup it may be
// waited on while calls are still being added.
type calls struct {
	mu   sync.Mutex
	n    int
	zero chan struct{} // closed while n is zero
}

func (c *calls) add() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == 0 {
		c.zero = make(chan struct{})
	}
	c.n++
}

func (c *calls) done() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n--; c.n == 0 {
		close(c.zero)
	}
}

// idle returns a channel closed when no call is in flight.
func (c *calls) idle() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == 0 {
		closed := make(chan struct{})
		close(closed)
		return closed
	}
	return c.zero
}

// TracerName is the instrumentation scope of the engine's spans.
const TracerName = "github.com/runbookdev/runbook/runtime"

// New makes an engine. Run it to work; its other methods may be called
// without running it.
func New(store driver.Store, handlers *Handlers, cfg Config) *Engine {
	cfg.defaults()
	e := &Engine{
		store: store, handlers: handlers, cfg: cfg, workerID: cfg.WorkerID,
		machine: machine.Machine{Worker: cfg.WorkerID, LeaseTTL: cfg.LeaseTTL, CallbackURL: cfg.CallbackURL, Limits: cfg.Limits,
			Handler: handlers.lookup, Observe: observerOf(cfg.Metrics), Policy: policyOf(cfg.Policy), MaxFanout: cfg.MaxFanout},
		plans: newPlanCache(cfg.PlanCacheSize, cfg.PlanCacheBytes, cfg.Metrics), data: newDataCache(cfg.DataCacheSize), log: cfg.Logger, metrics: cfg.Metrics,
		queue: newWorkQueue(), kick: make(chan struct{}, 1), sweepNow: make(chan struct{}, 1),
		slots: make(chan struct{}, cfg.MaxCalls), resumers: make(chan struct{}, cfg.Advancers),
		retryLines: newLineLimit(10 * time.Second), giveUpLines: newLineLimit(10 * time.Second),
	}
	e.notifier = &notifier{send: store.Signal, log: cfg.Logger, lines: newLineLimit(10 * time.Second)}
	// An inline call is made inside the advance, never cut short by a
	// shutdown: it has no outcome to lose, and its transaction commits or
	// not with it.
	e.machine.Inline = func(pc *machine.PendingCall) *machine.Outcome {
		e.metrics.callStarted(pc.Call.Verb)
		e.metrics.inlineStep(pc.Call.Verb)
		return e.execute(context.Background(), pc)
	}
	if cfg.TracerProvider != nil {
		e.machine.Tracer = cfg.TracerProvider.Tracer(TracerName)
	}
	// Half a claim left: claim the next while the advancers work on it,
	// when claiming finds work. Most of the queue's work is pushed by this
	// daemon itself (submissions, notifications, calls' outcomes), and a
	// claim after each of those pops found nothing, or found the very
	// runbook an advancer had in hand, which a second advancer then
	// advanced again, waiting for the first's lock: a claim transaction
	// per advance, and a resume's lock waits (BENCHMARKS.md, "What a
	// resume costs PostgreSQL").
	e.queue.lowWater, e.queue.runningLow = cfg.ClaimBatch/2, func() {
		if e.claimFinds.Load() {
			e.signal(e.kick)
		}
	}
	return e
}

// WorkerID is the name this engine's worker uses.
func (e *Engine) WorkerID() string { return e.workerID }

// Run works until ctx ends: it claims due runbooks, advances them, calls
// handlers, and records outcomes. Wake-ups come from LISTEN/NOTIFY, with
// polling and periodic sweeps underneath for what they miss.
//
// When ctx ends, Run stops taking work, lets running calls finish for up
// to ShutdownGrace, records their outcomes, releases the leases still
// held (so other workers take those steps at once), and returns nil.
func (e *Engine) Run(ctx context.Context) error {
	intake, stopIntake := context.WithCancel(ctx)
	defer stopIntake()
	// Database work must outlive ctx: the shutdown still records outcomes.
	work := context.WithoutCancel(ctx)
	calls, cancelCalls := context.WithCancel(work)
	defer cancelCalls()
	e.working.Store(&calls)
	defer e.working.Store(nil)

	var intakeLoops, advancers sync.WaitGroup
	intakeLoops.Go(func() { e.listen(intake, e.store.NewListener()) })
	intakeLoops.Go(func() { e.claimLoop(intake) })
	intakeLoops.Go(func() { e.sweepLoop(intake) })
	for range e.cfg.Advancers {
		advancers.Go(func() { e.advancer(work, calls) })
	}
	renewDone := make(chan struct{})
	renewing := make(chan struct{})
	go func() { defer close(renewing); e.renewLoop(work, renewDone) }()

	<-ctx.Done()
	e.log.Info("stopping: no new work; waiting for running calls", "grace", e.cfg.ShutdownGrace.String())
	e.working.Store(nil)
	stopIntake()
	intakeLoops.Wait()
	e.draining.Store(true)
	if !e.waitCalls(e.cfg.ShutdownGrace) {
		e.log.Warn("grace period over: cancelling the calls still running")
		cancelCalls()
		e.waitCalls(time.Hour)
	}
	e.queue.close()
	advancers.Wait()
	close(renewDone)
	<-renewing
	return e.releaseLeases(work)
}

func (e *Engine) signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// waitCalls waits for the calls in flight to finish, up to grace. Calls
// that outcomes recorded meanwhile would lease are not started (draining).
func (e *Engine) waitCalls(grace time.Duration) bool {
	select {
	case <-e.inflight.idle():
		return true
	case <-time.After(grace):
		return false
	}
}

// claimLoop hands due runbooks to the advancers: at once after a wake-up,
// and every PollInterval otherwise.
func (e *Engine) claimLoop(ctx context.Context) {
	for ctx.Err() == nil {
		// Claim only what the advancers can take soon; the rest stays due
		// for other workers.
		if e.queue.len() < e.cfg.ClaimBatch {
			ids, err := e.store.ClaimDue(ctx, e.cfg.ClaimBatch, e.cfg.LeaseTTL)
			if err != nil && ctx.Err() == nil {
				e.log.Error("claiming due runbooks", "err", err)
			}
			e.claimFinds.Store(len(ids) > 0)
			items := make([]workItem, len(ids))
			for i, id := range ids {
				items[i] = workItem{runbookID: id}
			}
			e.queue.push(items...)
			if len(ids) == e.cfg.ClaimBatch {
				continue // there may be more
			}
		} else {
			e.claimFinds.Store(true) // held back: claim once the queue runs low
		}
		select {
		case <-ctx.Done():
		case <-e.kick:
		case <-time.After(e.cfg.PollInterval):
		}
	}
}

// sweepLoop runs the sweeps every SweepInterval, and at once after the
// listener reconnects.
func (e *Engine) sweepLoop(ctx context.Context) {
	for ctx.Err() == nil {
		res, err := e.store.Sweep(ctx, 1000)
		e.metrics.swept(res.Took)
		switch {
		case err != nil && ctx.Err() == nil:
			e.log.Error("sweeping", "err", err)
		case res.Total() > 0:
			e.log.Info("sweep woke runbooks", "inbox", res.Inbox, "timeouts", res.Timeouts, "retries", res.Retries)
		}
		// Claim after every sweep: a runbook made due by a wake-up whose
		// NOTIFY was lost is already due, so the sweep does not count it.
		e.signal(e.kick)
		e.updateGauges(ctx)
		e.pruneOrphans(ctx)
		e.pruneCache(ctx)
		e.pruneFinished(ctx)
		e.fireSchedules(ctx)
		select {
		case <-ctx.Done():
		case <-e.sweepNow:
		case <-time.After(e.cfg.SweepInterval):
		}
	}
}

// fireSchedules is the schedule sweep: the ticks that have come make
// their runbooks (schedule_fire.go).
func (e *Engine) fireSchedules(ctx context.Context) {
	made, err := e.FireSchedules(ctx)
	switch {
	case err != nil && ctx.Err() == nil:
		e.log.Error("firing schedules", "err", err)
	case made > 0:
		e.log.Info("schedules fired", "runbooks", made)
	}
}

// pruneCache deletes expired result cache entries: lookups already ignore
// them, so this only bounds the table.
func (e *Engine) pruneCache(ctx context.Context) {
	pruned, err := e.store.PruneCache(ctx, e.cfg.Clock(), 1000)
	switch {
	case err != nil && ctx.Err() == nil:
		e.log.Error("pruning the result cache", "err", err)
	case pruned > 0:
		e.log.Info("pruned expired cache entries", "pruned", pruned)
	}
}

// retentionBatch is how many runbooks one sweep's retention batch deletes:
// a short transaction under their locks, beside the advances.
const retentionBatch = 100

// pruneFinished deletes one batch of what passed its retention.
func (e *Engine) pruneFinished(ctx context.Context) {
	if e.cfg.Retention <= 0 {
		return
	}
	now := e.cfg.Clock()
	o := driver.PruneOptions{FinishedBefore: now.Add(-e.cfg.Retention), Limit: retentionBatch}
	if e.cfg.ReceiptWindow > 0 {
		o.ReceiptsBefore = now.Add(-e.cfg.ReceiptWindow)
	}
	if e.cfg.LedgerRetention > 0 {
		o.LedgerBefore = now.Add(-e.cfg.LedgerRetention)
	}
	p, err := e.store.Prune(ctx, o)
	e.metrics.prunedRows(p)
	switch {
	case err != nil && ctx.Err() == nil:
		e.log.Error("pruning finished runbooks", "err", err)
	case !p.Done():
		e.log.Info("pruned what passed its retention", "runbooks", p.Runbooks, "receipts", p.Receipts, "ledger_rows", p.Attempts,
			"retention", e.cfg.Retention.String())
	}
}

// pruneOrphans deletes the notifications that waited past the orphan
// TTL for a step to park with their key, and counts those still waiting.
func (e *Engine) pruneOrphans(ctx context.Context) {
	if e.cfg.OrphanNotificationTTL < 0 {
		return
	}
	pruned, left, err := e.store.PruneOrphanNotifications(ctx, time.Now().Add(-e.cfg.OrphanNotificationTTL), 1000)
	switch {
	case err != nil && ctx.Err() == nil:
		e.log.Error("pruning orphan notifications", "err", err)
		return
	case pruned > 0:
		e.log.Info("pruned notifications no step parked with", "pruned", pruned, "ttl", e.cfg.OrphanNotificationTTL.String())
	}
	e.metrics.orphans(pruned, left)
}

func (e *Engine) updateGauges(ctx context.Context) {
	if e.metrics == nil {
		return
	}
	if parked, inbox, err := e.store.Gauges(ctx); err == nil {
		e.metrics.gauges(parked, inbox)
	}
}

// maxTries bounds how often a work item's transaction is retried.
const maxTries = 8

// maxTransientTries bounds the retries of a work item whose transaction
// failed for a transient reason (a lost connection, no primary), at
// maxRetryPause apart once the pauses have grown: about 20 seconds in
// all, which carries a call's outcome across a failover of the database
// (docs/scaling.md, "Across a failover") while its lease still stands,
// rather than letting the step run again after the lease expires.
const (
	maxTransientTries = 24
	maxRetryPause     = time.Second
)

// poisonTries is how often an outcome's transaction fails alone, with an
// error not known to be transient, before the outcome is recorded as its
// step's failure.
const poisonTries = 3

// advancer takes batches of work from the queue, advances them in one
// transaction, and starts the calls the transaction leased.
func (e *Engine) advancer(ctx, calls context.Context) {
	for {
		items, ok := e.queue.pop(e.cfg.BatchSize)
		if !ok {
			return
		}
		seen := map[uuid.UUID]bool{}
		var ids []uuid.UUID
		var outcomes []*machine.Outcome
		for _, it := range items {
			if !seen[it.runbookID] {
				seen[it.runbookID] = true
				ids = append(ids, it.runbookID)
			}
			if it.outcome != nil {
				outcomes = append(outcomes, it.outcome)
			}
		}
		began := time.Now()
		leased, err := e.advance(ctx, ids, outcomes)
		e.metrics.advanced(time.Since(began))
		if err != nil {
			e.retry(items, err)
			continue
		}
		for _, pc := range leased {
			e.startCall(calls, pc)
		}
	}
}

// retry puts a failed transaction's items back, after a pause that grows
// with their tries. An outcome given up on is not lost: its lease expires
// and the step runs again, with the same idempotency key.
//
// A failure that is not known to be transient may be a poison pill: one
// runbook's write the database refuses every time (a handler's result
// holding a NUL, which jsonb cannot store). Its batch is split, each item
// retried alone, so that the others' work goes through; and an outcome
// that still cannot be written alone is recorded as the step's failure
// instead, rather than given up on, which would let its lease expire and
// the call be made again, forever.
func (e *Engine) retry(items []workItem, err error) {
	transient := errors.Is(err, driver.ErrTransient)
	if write, held := e.retryLines.allow(); write || !transient {
		e.log.Warn("advance transaction failed; retrying", "err", err, "runbooks", len(items), "held_back", held)
	}
	suspect := !transient && !errors.Is(err, errLeaseRefused) &&
		!errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
	var again []workItem
	for _, it := range items {
		it.tries++
		switch {
		case suspect && len(items) > 1:
			it.alone = true
		case suspect && it.outcome != nil && it.outcome.Err == nil && it.tries >= poisonTries:
			e.log.Error("a call's outcome cannot be recorded; failing its step", append([]any{"runbook_id", it.runbookID,
				"step_id", it.outcome.StepID, "attempt", it.outcome.Attempt, "err", err},
				machine.TraceAttrs(it.outcome.Span, it.outcome.AttemptID)...)...)
			it.outcome = it.outcome.Unrecordable(errors.Is(err, driver.ErrBadRequest))
			it.tries = 0
		case it.tries >= maxTries && (!transient || it.tries >= maxTransientTries):
			// During an outage every item gives up alike, and nothing is
			// lost (the lease expires, the step runs again under its
			// key): a warning once in a while with how many, not an
			// error each. Anything else stays an error, each.
			if !transient {
				e.log.Error("giving up on a work item; its step runs again when its lease expires", "runbook_id", it.runbookID, "err", err)
			} else if write, held := e.giveUpLines.allow(); write {
				e.log.Warn("giving up on work items during an outage; their steps run again when their leases expire",
					"runbook_id", it.runbookID, "err", err, "held_back", held)
			}
			continue
		}
		again = append(again, it)
	}
	if len(again) == 0 {
		return
	}
	pause := min(time.Duration(again[0].tries*again[0].tries)*10*time.Millisecond, maxRetryPause)
	time.AfterFunc(pause, func() { e.queue.push(again...) })
}

// startCall runs a leased call in its own goroutine, once a slot is free.
// While draining, it does not: the lease is released at the end of the
// shutdown and another worker runs the step.
func (e *Engine) startCall(ctx context.Context, pc *machine.PendingCall) {
	if e.draining.Load() {
		return
	}
	e.slots <- struct{}{}
	e.inflight.add()
	e.running.Store(pc.StepID, pc)
	e.metrics.callStarted(pc.Call.Verb)
	go func() {
		defer e.inflight.done()
		o := e.execute(ctx, pc)
		e.running.Delete(pc.StepID)
		<-e.slots
		if o != nil {
			e.queue.push(workItem{runbookID: pc.RunbookID, outcome: o})
		}
	}()
}

// execute calls the handler, bounded by the verb's run_timeout, and turns
// what it returns into an outcome. A call cut short by shutdown has no
// outcome: its lease is released and another worker runs it again.
func (e *Engine) execute(ctx context.Context, pc *machine.PendingCall) *machine.Outcome {
	// The step's logger is made only for a line to write: a handler's
	// With formats its attributes at once, and most calls log nothing.
	log := func() *slog.Logger {
		return e.log.With(append([]any{"runbook_id", pc.RunbookID, "step", pc.Call.StepKey, "attempt", pc.Attempt},
			machine.TraceAttrs(pc.Span, pc.Call.AttemptID)...)...)
	}
	began := time.Now()
	o := makeCall(ctx, pc)
	if o == nil {
		log().Info("call cut short by shutdown; its step will run again")
		return nil
	}
	if o.Err != nil {
		if o.Err.Err != nil {
			// The cause is for the log only: it may name tables or hosts.
			log().Info("call failed", "code", o.Err.Code, "error", o.Err.Message, "cause", o.Err.Err.Error())
		} else {
			log().Info("call failed", "code", o.Err.Code, "error", o.Err.Message)
		}
	}
	e.metrics.callFinished(pc.Call.Verb, time.Since(began), o.Err)
	return o
}

// makeCall is execute's call, without its log lines and metrics: the
// handler's result (or its dry run's, or its rehearsal's and then its
// own), as an outcome; nil for a call cut short by ctx's end.
func makeCall(ctx context.Context, pc *machine.PendingCall) *machine.Outcome {
	callCtx, cancel := context.WithTimeout(trace.ContextWithSpanContext(ctx, pc.Span), pc.Timeout)
	defer cancel()
	var res handler.Result
	var err error
	var seen *machine.Rehearsed
	func() {
		defer func() {
			if p := recover(); p != nil {
				err = handler.Errorf(rbtype.CodeInternal, "the handler panicked: %v", p)
			}
		}()
		switch {
		case pc.DryRun:
			res, err = pc.Handler.(handler.DryRunner).DryRun(callCtx, pc.Call)
		case pc.Rehearsal != nil:
			if seen, err = rehearse(callCtx, pc.Rehearsal, pc.Handler, pc.Call); err == nil {
				res, err = pc.Handler.Call(callCtx, pc.Call)
			}
		default:
			res, err = pc.Handler.Call(callCtx, pc.Call)
		}
	}()
	if err != nil && ctx.Err() != nil {
		return nil
	}
	o := &machine.Outcome{RunbookID: pc.RunbookID, StepID: pc.StepID, Attempt: pc.Attempt, Purpose: pc.Purpose, Span: pc.Span, AttemptID: pc.Call.AttemptID,
		CacheKey: pc.CacheKey, DefinitionHash: pc.DefinitionHash, Rehearsed: seen,
		Result: res, DryRun: pc.DryRun, IdemKey: pc.Call.IdempotencyKey, ArgsHash: pc.ArgsHash}
	if err != nil {
		o.Err = handler.Classify(err)
	} else if !res.IsParked() {
		o.Value, err = machine.MarshalResult(res.Value())
		if err != nil {
			o.Err = handler.Errorf(rbtype.CodeInternal, "the handler's result cannot be stored as JSON: %v", err)
		}
	}
	return o
}

// renewLoop extends the leases of running calls every third of LeaseTTL.
func (e *Engine) renewLoop(ctx context.Context, done <-chan struct{}) {
	tick := time.NewTicker(e.cfg.LeaseTTL / 3)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return
		case <-tick.C:
		}
		var ids []int64
		e.running.Range(func(k, _ any) bool {
			ids = append(ids, k.(int64))
			return true
		})
		if len(ids) == 0 {
			continue
		}
		kept, err := e.store.RenewLeases(ctx, e.workerID, time.Now().Add(e.cfg.LeaseTTL), ids)
		if err != nil {
			e.log.Warn("renewing leases", "err", err)
			continue
		}
		if lost := len(ids) - len(kept); lost > 0 {
			e.log.Warn("leases lost while their calls ran; their outcomes will be dropped", "lost", lost)
		}
	}
}

// releaseLeases gives up the leases this worker still holds and makes
// their runbooks due, so another worker reclaims those steps at once
// instead of after LeaseTTL.
func (e *Engine) releaseLeases(ctx context.Context) error {
	leases, err := e.store.WorkerLeases(ctx, e.workerID)
	if err != nil || len(leases) == 0 {
		return err
	}
	ids := make([]int64, len(leases))
	seen := map[uuid.UUID]bool{}
	var runbooks []uuid.UUID
	for i, l := range leases {
		ids[i] = l.StepID
		if !seen[l.RunbookID] {
			seen[l.RunbookID] = true
			runbooks = append(runbooks, l.RunbookID)
		}
	}
	err = inTx(ctx, e.store, func(tx driver.Tx) error {
		if err := tx.LockRunbooks(ctx, runbooks); err != nil {
			return err
		}
		if _, err := tx.ReleaseLeases(ctx, e.workerID, ids); err != nil {
			return err
		}
		return tx.Wake(ctx, runbooks)
	})
	if err != nil {
		return fmt.Errorf("releasing leases at shutdown: %w", err)
	}
	if err := e.store.Signal(ctx); err != nil {
		e.log.Warn("telling other workers about the released steps; they will find them by polling", "err", err)
	}
	e.log.Info("released leases at shutdown", "steps", len(ids))
	return nil
}
