package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/debug"
	"runtime/pprof"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/runbookdev/runbook/builtin"
	"github.com/runbookdev/runbook/cmd/internal/cli"
	"github.com/runbookdev/runbook/durable"
	"github.com/runbookdev/runbook/httpapi"
	"github.com/runbookdev/runbook/lang"
	"github.com/runbookdev/runbook/machine"
	"github.com/runbookdev/runbook/registry"
	"github.com/runbookdev/runbook/runtime"
)

const serveUsage = `Usage: rbd serve [flags]

Serves the HTTP API and advances runbooks. With no --database-url it starts
its own PostgreSQL under --data-dir. SIGTERM or SIGINT stops it gracefully:
no new work, running calls get --shutdown-grace to finish, leases are
released; a second signal exits at once.
`

// serveFlags are rbd serve's settings.
type serveFlags struct {
	db                databaseFlags
	log               logFlags
	windows           retentionFlags
	listen            string
	callbackURL       string
	verbs             cli.ListFlag
	tokenFile         string
	policyFile        string
	webhookSecretFile string
	maxBody           int64
	bodyTimeout       time.Duration
	maxBodies         int
	maxWebhooks       int
	bodiesPerAddress  int
	bodyMinRate       int64
	headerTimeout     time.Duration
	maxHeaderBytes    int
	maxDiagnostics    int
	maxStreams        int
	streamsPerToken   int
	migrate           bool
	ui                bool
	mcpApprovals      bool
	publicMetrics     bool
	worker            bool
	allowAsync        bool
	readURL           string
	engine            runtime.Config
}

func parseServeFlags(args []string, stderr io.Writer) (*serveFlags, error) {
	f := &serveFlags{}
	fs := cli.NewEnvFlags("rbd serve", serveUsage, stderr)
	f.db.register(fs)
	f.db.registerCRUD(fs)
	fs.BoolVar(&f.migrate, "migrate", true, "run the database migrations at start")
	fs.Env("migrate", "RBD_MIGRATE")
	fs.BoolVar(&f.allowAsync, "allow-async-replication", false, "start even when the database primary has standbys its commits do not wait for (a failover may then lose acknowledged notifications and submissions); without it rbd refuses")
	fs.Env("allow-async-replication", "RBD_ALLOW_ASYNC_REPLICATION")
	fs.StringVar(&f.readURL, "read-database-url", "", "a standby's connection string: the views (a runbook, its events, lists, costs, the console, live streams) are read there once it has replayed the client's last write, else from the primary")
	fs.Env("read-database-url", "RBD_READ_DATABASE_URL")
	fs.BoolVar(&f.worker, "worker", true, "advance runbooks; with --worker=false this rbd only serves the API, and other rbd processes do the work")
	fs.Env("worker", "RBD_WORKER")
	fs.StringVar(&f.listen, "listen", "127.0.0.1:8080", "address the HTTP API listens on")
	fs.Env("listen", "RBD_LISTEN")
	fs.StringVar(&f.callbackURL, "callback-url", "", "the webhook URL durable handlers give external systems (default: http://ADDR/v1/notifications for the --listen address)")
	fs.Env("callback-url", "RBD_CALLBACK_URL")
	fs.Var(&f.verbs, "verbs", "directory or file of verb definitions used to compile submitted sources (repeatable)")
	fs.EnvList("verbs", "RBD_VERBS")
	fs.StringVar(&f.tokenFile, "api-token-file", "", "file of API bearer tokens, one per line; without it the API is open")
	fs.Env("api-token-file", "RBD_API_TOKEN_FILE")
	fs.StringVar(&f.policyFile, "policy", "", "the policy file (YAML) that gates, denies or lets run unattended each tenant's steps, and budgets them; SIGHUP reloads it; without it, steps tagged external_send wait for a person")
	fs.Env("policy", "RBD_POLICY")
	fs.StringVar(&f.webhookSecretFile, "webhook-secret-file", "", "file of webhook signing secrets, one per line (several while rotating); without it notifications are accepted unsigned")
	fs.Env("webhook-secret-file", "RBD_WEBHOOK_SECRET_FILE")
	fs.Int64Var(&f.maxBody, "max-body", httpapi.DefaultMaxBody, "largest request body accepted, in bytes")
	fs.Env("max-body", "RBD_MAX_BODY")
	fs.DurationVar(&f.bodyTimeout, "body-timeout", httpapi.DefaultBodyTimeout, "how long a client may take to send a request body")
	fs.Env("body-timeout", "RBD_BODY_TIMEOUT")
	fs.IntVar(&f.maxBodies, "max-concurrent-bodies", httpapi.DefaultMaxConcurrentBodies, "token-checked request bodies held at once, in units of --max-body; beyond them a request is answered 503")
	fs.Env("max-concurrent-bodies", "RBD_MAX_CONCURRENT_BODIES")
	fs.IntVar(&f.maxWebhooks, "max-concurrent-webhooks", httpapi.DefaultMaxConcurrentBodies, "webhook bodies held at once, in units of --max-body, apart from the token-checked ones; beyond them a notification is answered 503")
	fs.Env("max-concurrent-webhooks", "RBD_MAX_CONCURRENT_WEBHOOKS")
	fs.IntVar(&f.bodiesPerAddress, "max-bodies-per-address", httpapi.DefaultBodiesPerAddress, "request bodies read at once from one client address (0: no limit; raise it behind a proxy that does not buffer bodies)")
	fs.Env("max-bodies-per-address", "RBD_MAX_BODIES_PER_ADDRESS")
	fs.Int64Var(&f.bodyMinRate, "body-min-rate", httpapi.DefaultBodyMinRate, "slowest a request body may arrive, in bytes a second, over each 4 KiB of it (0: only --body-timeout)")
	fs.Env("body-min-rate", "RBD_BODY_MIN_RATE")
	fs.DurationVar(&f.headerTimeout, "read-header-timeout", 10*time.Second, "how long a client may take to send a request's headers")
	fs.Env("read-header-timeout", "RBD_READ_HEADER_TIMEOUT")
	fs.IntVar(&f.maxHeaderBytes, "max-header-bytes", 64<<10, "largest request header accepted, in bytes")
	fs.Env("max-header-bytes", "RBD_MAX_HEADER_BYTES")
	fs.IntVar(&f.maxDiagnostics, "max-diagnostics", httpapi.DefaultMaxDiagnostics, "diagnostics an error answer carries at most: the first ones, and how many there were")
	fs.Env("max-diagnostics", "RBD_MAX_DIAGNOSTICS")
	fs.IntVar(&f.maxStreams, "max-streams", httpapi.DefaultMaxStreams, "live event streams open at once, in all; beyond, 429")
	fs.Env("max-streams", "RBD_MAX_STREAMS")
	fs.IntVar(&f.streamsPerToken, "max-streams-per-token", httpapi.DefaultMaxStreamsPerToken, "live event streams open at once for one API token; beyond, 429")
	fs.Env("max-streams-per-token", "RBD_MAX_STREAMS_PER_TOKEN")
	fs.BoolVar(&f.publicMetrics, "public-metrics", false, "serve /metrics to anyone even when tokens name tenants (it sums every tenant's work by verb); otherwise it then needs a token with the metrics role")
	fs.Env("public-metrics", "RBD_PUBLIC_METRICS")
	fs.BoolVar(&f.ui, "ui", true, "serve the web console at /ui/")
	fs.Env("ui", "RBD_UI")
	fs.BoolVar(&f.mcpApprovals, "mcp-approvals", false, "let gates be approved and rejected through MCP (/mcp and rbd mcp), by tokens with the approve role; off, a person decides through the API or the console")
	fs.Env("mcp-approvals", "RBD_MCP_APPROVALS")
	e := &f.engine
	fs.IntVar(&e.Limits.MaxSteps, "max-steps", machine.DefaultMaxSteps, "steps a runbook may have, after every extension; beyond, 422")
	fs.Env("max-steps", "RBD_MAX_STEPS")
	fs.IntVar(&e.Limits.MaxSourceBytes, "max-source-bytes", machine.DefaultMaxSourceBytes, "largest source a submission or an extension may compile, in bytes; beyond, 413")
	fs.Env("max-source-bytes", "RBD_MAX_SOURCE_BYTES")
	fs.IntVar(&e.Limits.MaxPlanBytes, "max-plan-bytes", machine.DefaultMaxPlanBytes, "largest plan a runbook may have, submitted, compiled or extended, in bytes of JSON; beyond, 413")
	fs.Env("max-plan-bytes", "RBD_MAX_PLAN_BYTES")
	fs.Int64Var(&e.PlanCacheBytes, "plan-cache-bytes", runtime.DefaultPlanCacheBytes, "memory the decoded plans kept may take, in bytes (counted as four times their JSON)")
	fs.Env("plan-cache-bytes", "RBD_PLAN_CACHE_BYTES")
	fs.StringVar(&e.WorkerID, "worker-id", "", "this worker's name in leases and events (default host-pid-random)")
	fs.Env("worker-id", "RBD_WORKER_ID")
	fs.IntVar(&e.Advancers, "advancers", 2, "advance transactions run at once")
	fs.Env("advancers", "RBD_ADVANCERS")
	fs.IntVar(&e.MaxCalls, "max-calls", 512, "handler calls in flight at most")
	fs.Env("max-calls", "RBD_MAX_CALLS")
	fs.DurationVar(&e.LeaseTTL, "lease-ttl", 30*time.Second, "how long a step's lease lasts unrenewed; a dead worker's steps are taken back after it")
	fs.Env("lease-ttl", "RBD_LEASE_TTL")
	fs.DurationVar(&e.PollInterval, "poll-interval", time.Second, "how often to look for due runbooks when no wake-up arrives")
	fs.Env("poll-interval", "RBD_POLL_INTERVAL")
	fs.DurationVar(&e.SweepInterval, "sweep-interval", 5*time.Second, "how often to sweep for park timeouts, due retries and unprocessed notifications (expired leases are found by their runbooks' wake-ups)")
	fs.Env("sweep-interval", "RBD_SWEEP_INTERVAL")
	fs.DurationVar(&e.OrphanNotificationTTL, "orphan-notification-ttl", 30*24*time.Hour, "how long a notification for a key no step has parked with is kept; negative keeps them forever")
	fs.Env("orphan-notification-ttl", "RBD_ORPHAN_NOTIFICATION_TTL")
	fs.IntVar(&e.MaxFanout, "max-fanout", machine.DefaultMaxFanout, "most elements a for-each's list known only at run time may hold; a longer one fails the step that produced it with FANOUT_TOO_LARGE")
	fs.Env("max-fanout", "RBD_MAX_FANOUT")
	fs.IntVar(&e.MaxSchedulesPerTenant, "max-schedules-per-tenant", runtime.DefaultMaxSchedulesPerTenant, "most schedules one tenant may have; beyond, a new one is refused (422)")
	fs.Env("max-schedules-per-tenant", "RBD_MAX_SCHEDULES_PER_TENANT")
	fs.DurationVar(&e.MinScheduleInterval, "min-schedule-interval", runtime.DefaultMinScheduleInterval, "least time between two ticks of a schedule; a cron expression that ticks more often is refused")
	fs.Env("min-schedule-interval", "RBD_MIN_SCHEDULE_INTERVAL")
	fs.DurationVar(&e.Retention, "retention", 0, "delete runbooks that finished longer ago than this, with their rows, a batch each sweep (as rbd prune does); 0 keeps them")
	fs.Env("retention", "RBD_RETENTION")
	f.windows.register(fs)
	fs.DurationVar(&e.ShutdownGrace, "shutdown-grace", 10*time.Second, "how long running calls may finish after SIGTERM")
	fs.Env("shutdown-grace", "RBD_SHUTDOWN_GRACE")
	f.log.register(fs)
	rest, err := fs.Parse(args)
	if err != nil {
		return nil, err
	}
	if len(rest) > 0 {
		return nil, fs.UsageErrorf("serve takes no arguments, got %q", rest)
	}
	if f.maxBody <= 0 {
		return nil, errors.New("--max-body must be positive")
	}
	if e.Retention < 0 {
		return nil, errors.New("--retention must not be negative")
	}
	if e.MaxFanout <= 0 || e.MaxSchedulesPerTenant <= 0 || e.MinScheduleInterval <= 0 {
		return nil, errors.New("--max-fanout, --max-schedules-per-tenant and --min-schedule-interval must be positive")
	}
	e.ReceiptWindow, e.LedgerRetention = f.windows.receiptWindow, f.windows.ledgerRetention
	if f.bodyTimeout <= 0 || f.headerTimeout <= 0 || f.maxBodies <= 0 || f.maxWebhooks <= 0 || f.maxHeaderBytes <= 0 {
		return nil, errors.New("--body-timeout, --read-header-timeout, --max-concurrent-bodies, --max-concurrent-webhooks and --max-header-bytes must be positive")
	}
	if f.maxDiagnostics <= 0 || f.maxStreams <= 0 || f.streamsPerToken <= 0 || e.Limits.MaxSteps <= 0 ||
		e.Limits.MaxSourceBytes <= 0 || e.Limits.MaxPlanBytes <= 0 || e.PlanCacheBytes <= 0 {
		return nil, errors.New("--max-diagnostics, --max-streams, --max-streams-per-token, --max-steps, --max-source-bytes, --max-plan-bytes and --plan-cache-bytes must be positive")
	}
	if f.bodiesPerAddress < 0 || f.bodyMinRate < 0 {
		return nil, errors.New("--max-bodies-per-address and --body-min-rate may not be negative (0 turns each off)")
	}
	return f, nil
}

// tuneGC lets the daemon's heap grow to two and a half times its live
// data between collections, unless GOGC says otherwise. The advance
// allocates a lot that dies at once (rows, batches, events); at Go's
// default of twice, collection took a sixth of rbd's CPU per step.
// Measured (BENCHMARKS.md, "Inline steps"): rbd CPU per chain step 74-87 us at
// GOGC=100, 61-63 at 200, and 150 level with 200 in two pairs; RSS with
// 100k parked runbooks 64 MiB at 100, 73 at 150, 82-91 at 200, against a
// target of 100 MB: 150 keeps the room.
func tuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(150)
	}
}

func runServe(args []string, stdout, stderr io.Writer) int {
	f, err := parseServeFlags(args, stderr)
	if err != nil {
		return parseStatus(err, stderr)
	}
	log := f.log.logger(stderr)
	tuneGC()
	stopProfile, err := startProfile(os.Getenv("RBD_CPUPROFILE"))
	if err != nil {
		return cantRun(stderr, "RBD_CPUPROFILE: %v", err)
	}
	defer stopProfile()
	defer startHeapProfile(os.Getenv("RBD_HEAPPROFILE"))()
	ctx, stopped := shutdownSignals(log)
	defer stopped()
	if err := serve(ctx, f, log); err != nil {
		log.Error("rbd serve failed", "err", err)
		return exitFailed
	}
	return exitOK
}

// shutdownSignals returns a context that ends at the first SIGTERM or
// SIGINT. A second signal exits at once: the leases of calls still running
// then expire and other workers take the steps back.
func shutdownSignals(log *slog.Logger) (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		sig, ok := <-ch
		if !ok {
			return
		}
		log.Info("shutting down", "signal", sig.String())
		cancel()
		if sig, ok = <-ch; ok {
			log.Warn("second signal: exiting now; running steps will be taken back when their leases expire", "signal", sig.String())
			os.Exit(exitFailed)
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		close(ch)
		cancel()
	}
}

// serve runs the daemon until ctx ends.
func serve(ctx context.Context, f *serveFlags, log *slog.Logger) error {
	b := cli.BuildInfo()
	log.Info("rbd starting", "version", b.Version, "revision", b.Revision, "go_version", b.GoVersion)
	// The database and the HTTP listener outlive ctx: they are needed
	// while running calls finish and leases are released.
	base := context.WithoutCancel(ctx)
	if f.db.maxConns <= 0 {
		// Two per advancer: one for its transaction, one of headroom
		// (kept when pg.crud, which used it, got a pool of its own); the
		// listener, claims, sweeps, lease renewals and API requests need
		// the rest.
		f.db.maxConns = 2*max(f.engine.Advancers, 1) + 8
	}
	// What the operator gave is checked before PostgreSQL starts (which,
	// embedded, takes seconds, and migrates): a missing token file, a bad
	// verb file or a port in use is said at once.
	tokens, err := readLines(f.tokenFile, "--api-token-file")
	if err != nil {
		return err
	}
	principals, _, err := httpapi.ParseTokens(tokens)
	if err != nil {
		return fmt.Errorf("--api-token-file: %w", err)
	}
	for _, w := range httpapi.TokenWarnings(principals) {
		log.Warn("--api-token-file: " + w)
	}
	secretLines, err := readLines(f.webhookSecretFile, "--webhook-secret-file")
	if err != nil {
		return err
	}
	secrets, secretTenants, err := httpapi.ParseWebhookSecrets(secretLines)
	if err != nil {
		return fmt.Errorf("--webhook-secret-file: %w", err)
	}
	early, err := loadCatalogue(f.verbs, runtime.NewHandlers(builtin.Deps{}), f.db.schema, slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	pol, err := loadPolicy(f.policyFile, early, log)
	if err != nil {
		return fmt.Errorf("--policy: %w", err)
	}
	pol.reloadOnHangup(ctx)
	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		return fmt.Errorf("error listening on %s: %w", f.listen, err)
	}
	defer ln.Close() // closed already when the server ran; not when the database failed to open
	addr := ln.Addr().String()

	db, err := f.db.open(ctx, log)
	if err != nil {
		return err
	}
	defer db.close(log)
	if err := prepareSchema(ctx, db.store, f.migrate, log); err != nil {
		return err
	}
	async, err := checkReplication(ctx, db.store, f.allowAsync, log)
	if err != nil {
		return err
	}
	var reads *replicaReads
	if f.readURL != "" {
		replica, err := durable.Open(ctx, durable.Config{URL: f.readURL, Schema: f.db.schema, MaxConns: int32(f.db.maxConns)})
		if err != nil {
			return fmt.Errorf("--read-database-url: %w", err)
		}
		defer replica.Close()
		reads = &replicaReads{primary: db.store, replica: replica, log: log}
	}
	handlers := runtime.NewHandlers(builtin.Deps{CRUD: db.crud, DaemonSchema: f.db.schema})
	cat, err := loadCatalogue(f.verbs, handlers, f.db.schema, log)
	if err != nil {
		return err
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		newPoolCollector(db.store.PoolStats), newBuildInfoGauge(cli.BuildInfo()))
	ready := func(ctx context.Context) error {
		if err := db.store.CheckPrimary(ctx); err != nil {
			return err
		}
		return schemaCurrent(ctx, db.store)
	}
	watch := newPrimaryWatch(db.store.CheckPrimary, log, reg, async)
	cfg := f.engine
	cfg.Catalogue, cfg.Logger, cfg.Metrics, cfg.Policy = cat, log, runtime.NewMetrics(reg), pol.current
	cfg.CallbackURL = f.callbackURL
	var apiReads httpapi.Reads
	if reads != nil {
		cfg.ReadStore, apiReads = reads.replica, reads
	}
	if cfg.CallbackURL == "" {
		cfg.CallbackURL = "http://" + addr + "/v1/notifications"
	}
	tp, stopTracing, err := startTracing(ctx, os.Getenv, log)
	if err != nil {
		return err
	}
	cfg.TracerProvider = tp
	if len(principals) > 0 {
		// A schedule's ticks run under what its maker's token may do now.
		cfg.TokenScope = httpapi.TokenScopes(principals)
	}
	engine := runtime.New(db.store, handlers, cfg)

	api := httpapi.New(httpapi.Config{
		Engine: engine, Tokens: tokens, WebhookSecrets: secrets, WebhookTenants: secretTenants, MaxBody: f.maxBody, Logger: log,
		BodyTimeout: f.bodyTimeout, MaxConcurrentBodies: f.maxBodies, MaxConcurrentWebhooks: f.maxWebhooks,
		BodiesPerAddress: offIfZero(f.bodiesPerAddress), BodyMinRate: offIfZero(f.bodyMinRate),
		PublicMetrics: f.publicMetrics, MaxDiagnostics: f.maxDiagnostics, MaxStreams: f.maxStreams, MaxStreamsPerToken: f.streamsPerToken,
		Console: consoleHandler(f.ui), Catalogue: cat, MCPApprovals: f.mcpApprovals, Version: version(),
		Metrics: promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), Registerer: reg,
		Ready: ready, Reads: apiReads,
	})
	// No ReadTimeout: it would also end live event streams. The API bounds
	// each body's reading itself (--body-timeout).
	srv := &http.Server{
		Handler: api, ReadHeaderTimeout: f.headerTimeout, MaxHeaderBytes: f.maxHeaderBytes, IdleTimeout: 2 * time.Minute,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	srv.RegisterOnShutdown(api.CloseStreams)
	if len(tokens) == 0 {
		log.Warn("NO API TOKENS: anyone who can reach " + addr + " may submit, approve and cancel runbooks; give --api-token-file")
	}
	if len(secrets) == 0 {
		log.Warn("NO WEBHOOK SECRET: notifications are accepted unsigned, so anyone who can reach " + addr + " may resume a parked step; give --webhook-secret-file")
	}

	var wg sync.WaitGroup
	errs := make(chan error, 2)
	runCtx, stopEngine := context.WithCancel(ctx)
	defer stopEngine()
	wg.Add(1)
	go func() {
		defer wg.Done()
		watch.run(runCtx)
	}()
	if reads != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			reads.watch(runCtx)
		}()
	}
	if f.worker {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := engine.Run(runCtx); err != nil {
				errs <- fmt.Errorf("the engine stopped: %w", err)
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			errs <- fmt.Errorf("the HTTP server stopped: %w", err)
		}
	}()
	log.Info("listening", "addr", addr, "worker_id", engine.WorkerID(), "worker", f.worker, "callback_url", cfg.CallbackURL,
		"verbs", len(catalogueNames(cat)), "policy", policySource(f.policyFile), "policy_hash", pol.current().Hash())

	var failed error
	select {
	case <-ctx.Done():
	case failed = <-errs:
	}
	stopEngine()
	shutdownCtx, cancel := context.WithTimeout(base, cfg.ShutdownGrace+5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		log.Warn("HTTP requests still open at shutdown were cut", "err", err)
	}
	wg.Wait()
	// The engine has stopped: its last spans are queued. Flush them.
	if err := stopTracing(shutdownCtx); err != nil {
		log.Warn("tracing: spans still queued at shutdown were lost", "err", err)
	}
	close(errs)
	if failed == nil {
		failed = <-errs
	}
	if failed == nil {
		log.Info("stopped")
	}
	return failed
}

// offIfZero turns a flag's 0, which means "off", into the negative value
// that means it in httpapi.Config, where 0 means the default.
func offIfZero[T int | int64](v T) T {
	if v == 0 {
		return -1
	}
	return v
}

// prepareSchema migrates, or with --migrate=false checks that someone
// has.
func prepareSchema(ctx context.Context, store *durable.Store, migrate bool, log *slog.Logger) error {
	if !migrate {
		return schemaCurrent(ctx, store)
	}
	status, err := store.Migrate(ctx)
	if err != nil {
		return err
	}
	log.Info("database schema is current", "version", status.Current)
	return nil
}

// schemaCurrent reports whether the database answers and is at this
// binary's schema version.
func schemaCurrent(ctx context.Context, store *durable.Store) error {
	status, err := store.MigrationStatus(ctx)
	if err != nil {
		return err
	}
	if status.Current != status.Latest {
		return fmt.Errorf("the database schema is at version %d and this rbd needs %d; run rbd migrate", status.Current, status.Latest)
	}
	return nil
}

// loadCatalogue reads the verb definitions, checking pg.crud's tables
// against rbd's own schema. Errors in them stop the daemon, printed as rbc
// prints them; warnings are logged.
func loadCatalogue(paths []string, handlers *runtime.Handlers, daemonSchema string, log *slog.Logger) (*registry.Catalogue, error) {
	if len(paths) == 0 {
		log.Warn("no --verbs: submitted sources cannot be compiled, nor plans checked, so submissions are refused")
		return nil, nil
	}
	cat, sources, diags, err := registry.Load(paths, handlers.Specs(), registry.DaemonSchema(daemonSchema))
	if err != nil {
		return nil, err
	}
	if len(diags) > 0 {
		var b strings.Builder
		_ = lang.WriteText(&b, diags, sources)
		if diags.HasErrors() {
			return nil, fmt.Errorf("the verb definitions have errors:\n%s", b.String())
		}
		log.Warn("the verb definitions have warnings:\n" + b.String())
	}
	return cat, nil
}

func catalogueNames(cat *registry.Catalogue) []string {
	if cat == nil {
		return nil
	}
	return cat.Names()
}

// readLines reads a file of secrets: one per line, blank lines and lines
// starting with # skipped. The values are never logged.
func readLines(path, flagName string) ([]string, error) {
	if path == "" {
		return nil, nil
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flagName, err)
	}
	var out []string
	for _, line := range strings.Split(string(raw), "\n") {
		line = strings.TrimSpace(line)
		if line != "" && !strings.HasPrefix(line, "#") {
			out = append(out, line)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: %s holds no value", flagName, path)
	}
	return out, nil
}

// startProfile writes a CPU profile of the daemon to path until it stops,
// when path is set: BENCHMARKS.md shows where the time goes with it. At
// the stop it also writes the allocations over the daemon's life beside
// it (x.pprof, x-allocs.pprof): a quarter of the CPU on the hot path is
// the garbage collector, and this says who made the garbage.
func startProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
		if a, err := os.Create(strings.TrimSuffix(path, ".pprof") + "-allocs.pprof"); err == nil {
			_ = pprof.Lookup("allocs").WriteTo(a, 0)
			a.Close()
		}
	}, nil
}

// policySource names the policy in force for the log.
func policySource(file string) string {
	if file == "" {
		return "built-in"
	}
	return file
}
