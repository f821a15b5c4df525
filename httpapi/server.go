package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/runbookdev/runbook/registry"
	"github.com/runbookdev/runbook/runtime"
)

// Config is what a Server serves and how.
type Config struct {
	// Engine answers every runbook request. Required.
	Engine *runtime.Engine
	// Reads, when set, serves the views from a standby without a client
	// reading older than its own write (readafter.go); nil reads
	// everything from the primary.
	Reads Reads
	// Ready reports whether the daemon can do its work: the database
	// answers and its migrations are current. Nil means always ready.
	Ready func(context.Context) error
	// Tokens are the bearer tokens the API accepts. Empty means the API
	// is open, which rbd serve warns about.
	Tokens []string
	// WebhookSecrets sign notifications; any one of them may match (more
	// than one while rotating). Empty means notifications are accepted
	// unsigned, which rbd serve warns about.
	WebhookSecrets [][]byte
	// WebhookTenants, beside WebhookSecrets, names the tenant each secret
	// is for ("" or missing: any tenant's waits).
	WebhookTenants []string
	// MaxBody caps request bodies; zero means DefaultMaxBody.
	MaxBody int64
	// BodyTimeout bounds how long reading one request body may take;
	// zero means DefaultBodyTimeout. It is a deadline on the body alone,
	// not on the request, so live event streams may last for hours.
	BodyTimeout time.Duration
	// MaxConcurrentBodies sizes the pool of token-checked requests'
	// bodies, read or being handled: it times MaxBody bytes, whatever
	// clients send; beyond it a request is 503 with Retry-After. Zero
	// means DefaultMaxConcurrentBodies.
	MaxConcurrentBodies int
	// MaxConcurrentWebhooks sizes the webhooks' pool alike, apart from
	// the other: unauthenticated senders never take token holders' room.
	// Zero means DefaultMaxConcurrentBodies.
	MaxConcurrentWebhooks int
	// BodiesPerAddress bounds the bodies read at once from one client
	// address. Zero means DefaultBodiesPerAddress; negative, no bound.
	BodiesPerAddress int
	// BodyMinRate is the slowest a body may arrive, in bytes a second,
	// over each chunk of it; slower, it is cut off with 408. Zero means
	// DefaultBodyMinRate; negative, no rate (only BodyTimeout).
	BodyMinRate int64
	// MaxStreams and MaxStreamsPerToken bound the live event streams
	// open at once, in all and for each token; beyond, 429. Zero means
	// DefaultMaxStreams and DefaultMaxStreamsPerToken.
	MaxStreams, MaxStreamsPerToken int
	// MaxDiagnostics bounds the diagnostics an error answer carries: the
	// first of them, and how many there were (a source of 115,000 unknown
	// verbs once answered 54 MB). Zero means DefaultMaxDiagnostics.
	MaxDiagnostics int
	// PublicMetrics serves /metrics to anyone even when tokens name
	// tenants; otherwise it then needs a token with the metrics role (or
	// admin), since it sums every tenant's work by verb.
	PublicMetrics bool
	// Metrics serves /metrics; nil means 404.
	Metrics http.Handler
	// Registerer receives the HTTP request metrics; nil means none.
	Registerer prometheus.Registerer
	Logger     *slog.Logger
	// EventPoll is how often a live event stream looks for new events
	// (200ms), and Heartbeat how often an idle one sends a comment to keep
	// proxies from closing it (15s).
	EventPoll time.Duration
	Heartbeat time.Duration
	// Now is the clock signatures are checked against; nil means time.Now.
	Now func() time.Time
	// Console serves the web console under /ui/; nil means no console.
	Console http.Handler
	// Catalogue is the verbs GET /v1/verbs lists: the engine's, which
	// compiles submitted sources. Nil lists none.
	Catalogue *registry.Catalogue
	// MCPApprovals offers the approve and reject tools at /mcp (rbd serve
	// --mcp-approvals). Off, a gate is decided only through the API's own
	// routes, by a person's client, and a decision that says it comes
	// through MCP is refused.
	MCPApprovals bool
	// Version is the daemon's version, which /mcp reports.
	Version string
}

// Server is the HTTP API. It is an http.Handler.
type Server struct {
	cfg    Config
	engine *runtime.Engine
	tokens tokens
	// apiRoutes are the token-checked routes, each needing a role.
	apiRoutes []string
	mux       *http.ServeMux
	log       *slog.Logger
	metrics   *httpMetrics
	// closing ends live event streams when the daemon shuts down:
	// http.Server.Shutdown waits for handlers, and a stream would never
	// return on its own.
	closing   chan struct{}
	closeOnce sync.Once
	// webhookBodies and apiBodies hold the bytes of the request bodies
	// being read or handled, each kind in a pool of its own; addresses
	// counts the bodies being read by client address.
	webhookBodies, apiBodies *bodyPool
	addresses                *addressCap
	refusals                 *refusals
	streams                  *streamLimit
	outage                   outage
	readiness                readiness
	writes                   lastWrites // each token's last write, with Config.Reads
	// table is every route registered, in order, for Routes.
	table []Route
	// mcp serves /mcp.
	mcp *mcp.StreamableHTTPHandler
	// tenanted: some token names a tenant, and /metrics, which sums
	// every tenant's work, needs a token (Config.PublicMetrics).
	tenanted bool
}

// New builds the API's routes. Its tokens must parse (ParseTokens, which
// rbd serve calls before it starts anything): New panics otherwise, as a
// daemon must never run with fewer restrictions than its operator wrote.
func New(cfg Config) *Server {
	principals, digests, err := ParseTokens(cfg.Tokens)
	if err != nil {
		panic("httpapi: --api-token-file: " + err.Error())
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = DefaultMaxBody
	}
	if cfg.BodyTimeout <= 0 {
		cfg.BodyTimeout = DefaultBodyTimeout
	}
	if cfg.MaxConcurrentBodies <= 0 {
		cfg.MaxConcurrentBodies = DefaultMaxConcurrentBodies
	}
	if cfg.MaxConcurrentWebhooks <= 0 {
		cfg.MaxConcurrentWebhooks = DefaultMaxConcurrentBodies
	}
	if cfg.BodiesPerAddress == 0 {
		cfg.BodiesPerAddress = DefaultBodiesPerAddress
	}
	if cfg.BodyMinRate == 0 {
		cfg.BodyMinRate = DefaultBodyMinRate
	}

	if cfg.MaxStreams <= 0 {
		cfg.MaxStreams = DefaultMaxStreams
	}
	if cfg.MaxStreamsPerToken <= 0 {
		cfg.MaxStreamsPerToken = DefaultMaxStreamsPerToken
	}
	if cfg.MaxDiagnostics <= 0 {
		cfg.MaxDiagnostics = DefaultMaxDiagnostics
	}
	if cfg.EventPoll <= 0 {
		cfg.EventPoll = 200 * time.Millisecond
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = 15 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{
		cfg: cfg, engine: cfg.Engine, tokens: tokens{digests: digests, principals: principals}, mux: http.NewServeMux(),
		log: cfg.Logger, metrics: newHTTPMetrics(cfg.Registerer), closing: make(chan struct{}),
		webhookBodies: newBodyPool("webhook", poolBytes(cfg.MaxConcurrentWebhooks, cfg.MaxBody)),
		apiBodies:     newBodyPool("api", poolBytes(cfg.MaxConcurrentBodies, cfg.MaxBody+mcpEnvelope)),
		addresses:     newAddressCap(max(cfg.BodiesPerAddress, 0)),
		refusals:      newRefusals(cfg.Logger, cfg.Registerer, cfg.Now),
		streams:       newStreamLimit(cfg.MaxStreamsPerToken, cfg.MaxStreams),
	}
	for _, p := range principals {
		s.tenanted = s.tenanted || p.Tenant != runtime.DefaultTenant
	}
	s.mcp = s.newMCPHandler()
	s.routes()
	return s
}

// poolBytes is the size of a pool of n bodies of at most maxBody bytes,
// each rounded up to whole chunks (a pool must hold one whole body).
func poolBytes(n int, maxBody int64) int64 {
	return int64(n) * ((maxBody + bodyChunk) / bodyChunk * bodyChunk)
}

// CloseStreams ends the live event streams, now and from now on; their
// clients reconnect, to this daemon's successor or another. Register it
// with http.Server.RegisterOnShutdown.
func (s *Server) CloseStreams() { s.closeOnce.Do(func() { close(s.closing) }) }

// ServeHTTP answers one request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// access says who may call a route.
type access int

const (
	public  access = iota // health, the OpenAPI document
	signed                // the webhook: its signature, not a token
	api                   // a bearer token, when tokens are configured, with the route's role
	token                 // any valid bearer token, whatever its roles: whoami, and /mcp, whose tools check theirs
	metrics               // public, unless tokens name tenants (Config.PublicMetrics)
)

func (s *Server) routes() {
	methods := map[string][]string{}
	route := func(method, path string, who access, h func(http.ResponseWriter, *http.Request) error) {
		methods[path] = append(methods[path], method)
		if who == api {
			s.apiRoutes = append(s.apiRoutes, method+" "+path)
		}
		s.table = append(s.table, Route{Method: method, Path: path})
		s.mux.Handle(method+" "+path, s.wrap(method+" "+path, who, h))
	}
	route("POST", "/v1/runbooks", api, s.submit)
	route("GET", "/v1/runbooks", api, s.list)
	route("GET", "/v1/costs", api, s.costs)
	route("GET", "/v1/runbooks/{id}", api, s.get)
	route("GET", "/v1/runbooks/{id}/events", api, s.events)
	route("GET", "/v1/runbooks/{id}/plan", api, s.plan)
	route("GET", "/v1/runbooks/{id}/steps/{key}", api, s.step)
	route("POST", "/v1/runbooks/{id}/cancel", api, s.cancel)
	route("POST", "/v1/runbooks/{id}/retry", api, s.retry)
	route("POST", "/v1/runbooks/{id}/regenerate", api, s.regenerate)
	route("POST", "/v1/runbooks/{id}/close", api, s.close)
	route("POST", "/v1/runbooks/{id}/steps/{key}/resolve", api, s.resolve)
	route("POST", "/v1/runbooks/{id}/steps/{key}/approve", api, s.approve)
	route("POST", "/v1/runbooks/{id}/steps/{key}/reject", api, s.reject)
	route("POST", "/v1/runbooks/{id}/steps", api, s.extend)
	route("GET", "/v1/whoami", token, s.whoami)
	route("GET", "/v1/verbs", api, s.listVerbs)
	route("GET", "/v1/outcomes/{id}", api, s.outcome)
	route("POST", "/v1/schedules", api, s.createSchedule)
	route("GET", "/v1/schedules", api, s.listSchedules)
	route("GET", "/v1/schedules/{id}", api, s.getSchedule)
	route("PATCH", "/v1/schedules/{id}", api, s.patchSchedule)
	route("DELETE", "/v1/schedules/{id}", api, s.deleteSchedule)
	route("GET", "/v1/budgets", api, s.budgets)
	route("PUT", "/v1/budgets/{tenant}/{scope}", api, s.setBudget)
	route("DELETE", "/v1/budgets/{tenant}/{scope}", api, s.clearBudget)
	route("POST", "/v1/notifications", signed, s.notify)
	route("GET", "/healthz", public, s.healthz)
	route("GET", "/readyz", public, s.readyz)
	route("GET", "/metrics", metrics, s.serveMetrics)
	route("GET", "/v1/openapi.json", public, s.openapi)
	route("POST", "/mcp", token, s.serveMCP)

	// ServeMux answers a wrong method or an unknown path in plain text;
	// these answer in JSON like every other error.
	for path, allowed := range methods {
		if slices.Contains(allowed, "GET") {
			allowed = append(allowed, "HEAD")
		}
		allow := strings.Join(allowed, ", ")
		s.mux.Handle(path, s.wrap(path, public, func(w http.ResponseWriter, r *http.Request) error {
			w.Header().Set("Allow", allow)
			return errorf(http.StatusMethodNotAllowed, CodeMethodNotAllowed, "%s %s is not allowed; use %s", r.Method, r.URL.Path, allow)
		}))
	}
	if s.cfg.Console != nil {
		// The page itself is public; the data it shows needs a token.
		s.mux.Handle("GET /ui/", s.cfg.Console)
		s.mux.Handle("GET /ui", http.RedirectHandler("/ui/", http.StatusMovedPermanently))
	}
	s.mux.Handle("/", s.wrap("/", public, func(w http.ResponseWriter, r *http.Request) error {
		return errorf(http.StatusNotFound, CodeNotFound, "no endpoint %s %s", r.Method, r.URL.Path)
	}))
}

// wrap turns a handler that returns its error into an http.Handler that
// checks the caller's token, answers errors in JSON, logs and counts.
func (s *Server) wrap(route string, who access, h func(http.ResponseWriter, *http.Request) error) http.Handler {
	role := routeRoles[route]
	if who == metrics {
		// Decided once: the tokens and the flag do not change while the
		// daemon runs.
		who = public
		if s.tenanted && !s.cfg.PublicMetrics {
			who, role = api, RoleMetrics
		}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &recorder{ResponseWriter: w}
		var err error
		var caller *Principal
		var known bool
		tokened := who == api || who == token
		if tokened {
			caller, known = s.tokens.principal(r)
		}
		var foreign string
		if tokened && len(s.tokens.digests) == 0 {
			foreign = crossOrigin(r)
		}
		switch {
		case foreign != "":
			s.leaveBody(rec, r)
			err = s.refuse(r, reasonCrossOrigin, errorf(http.StatusForbidden, CodeForbidden,
				"this daemon has no API tokens, so it refuses what may be a web page's request: %s; send JSON (Content-Type: application/json) from a client, not a browser page", foreign))
		case tokened && !known:
			rec.Header().Set("WWW-Authenticate", `Bearer realm="rbd"`)
			s.leaveBody(rec, r)
			err = s.refuse(r, reasonToken, errorf(http.StatusUnauthorized, CodeUnauthorized,
				"a valid API token is required: Authorization: Bearer <token> (rbd's commands and rbd mcp send the one in RBD_TOKEN or --token)"))
		case who == api && !caller.has(role):
			s.leaveBody(rec, r)
			err = errorf(http.StatusForbidden, CodeForbidden, "this token (actor %s) lacks the %s role that %s needs",
				caller.Actor, role, route)
		case role == RoleMetrics:
			s.leaveBody(rec, r)
			err = h(rec, r)
		case who == public:
			// No public route takes a body: none is read.
			s.leaveBody(rec, r)
			err = h(rec, r)
		default:
			if who == signed && len(s.cfg.WebhookSecrets) > 0 && viaMCP(r) == nil {
				// A signature header that is missing, malformed or stale
				// cannot match whatever the body: refused before a byte
				// of it is read or any room is taken for it.
				if herr := checkSignatureHeader(r.Header.Get(SignatureHeader), s.cfg.Now()); herr != nil {
					s.leaveBody(rec, r)
					err = s.refuse(r, reasonSignature, errorf(http.StatusUnauthorized, CodeUnauthorized, "%v", herr))
					break
				}
			}
			pool := s.apiBodies
			if who == signed {
				pool = s.webhookBodies
			}
			release, berr := s.takeBody(rec, r, pool, s.bodyLimit(route))
			if berr != nil {
				err = berr
				break
			}
			release = onlyOnce(release)
			r = r.WithContext(context.WithValue(r.Context(), bodyRoomKey{}, release))
			if tokened {
				// The engine answers for this principal's tenant only.
				r = r.WithContext(withPrincipal(runtime.WithScope(r.Context(), caller.scope()), caller))
			}
			var out http.ResponseWriter = rec
			if s.cfg.Reads != nil {
				// With a standby for reads: a read is served there once it
				// has the client's last write; a write's answer says where
				// the log ended after it (readafter.go).
				if r.Method == http.MethodGet || r.Method == http.MethodHead {
					ctx, rerr := s.readContext(r, caller)
					if rerr != nil {
						release()
						err = rerr
						break
					}
					r = r.WithContext(ctx)
				} else {
					out = &positionWriter{ResponseWriter: rec, ctx: r.Context(), s: s, caller: caller}
				}
			}
			// Deferred, so that a handler's panic (which net/http
			// recovers) does not keep the body's room for good.
			func() {
				defer release()
				err = h(out, r)
			}()
		}
		if err != nil {
			ae := classify(err)
			if ae.limit != nil && !ae.refused {
				s.refuse(r, reasonLimitPrefix+strings.ReplaceAll(strings.TrimPrefix(ae.limit.Name, "max-"), "-", "_"), ae)
			}
			if rec.status == 0 {
				writeError(rec, s.capDiagnostics(ae))
			}
			switch {
			case ae.refused:
				// Counted and logged, once in a while, by refuse.
			case ae.status >= 500 && errors.Is(r.Context().Err(), context.Canceled):
				// The client went away, and its request's context was
				// cancelled under the work: not the database's fault, nor
				// the daemon's (the cancelled query says "unavailable").
				s.log.Debug("the client left before its answer", "method", r.Method, "path", r.URL.Path, "err", errorText(ae))
			case ae.code == CodeUnavailable && ae.cause != nil:
				s.outage.failed(s.log, ae.cause, time.Now())
			case ae.code == CodeNotReady:
				// readyz logs its reason itself, when it changes.
			case ae.status >= 500:
				s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "status", ae.status, "err", errorText(ae))
			}
		} else if who != public && role != RoleMetrics {
			// Every route but health and metrics reads the database.
			s.outage.succeeded(s.log, time.Now())
		}
		took := time.Since(start)
		s.metrics.observe(route, rec.statusCode(), took)
		s.log.Debug("http", "method", r.Method, "path", r.URL.Path, "status", rec.statusCode(), "took", took)
	})
}

func errorText(ae *apiError) string {
	if ae.cause != nil {
		return ae.cause.Error()
	}
	return ae.message
}

// recorder remembers the status written, for logs and metrics. Unwrap
// lets http.ResponseController reach the connection's Flush.
type recorder struct {
	http.ResponseWriter
	status int
}

func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
	r.ResponseWriter.WriteHeader(status)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

func (r *recorder) statusCode() int {
	if r.status == 0 {
		return http.StatusOK
	}
	return r.status
}
