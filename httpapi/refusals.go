package httpapi

import (
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// refusalLogEvery is how often a kind of refusal that goes on is logged
// again, with the number refused since.
const refusalLogEvery = 10 * time.Second

// The reasons a request is refused for a client's fault or the daemon's
// limits, as rbd_http_refusals_total labels them.
const (
	reasonBodyTooLarge    = "body_too_large"
	reasonBodyTooSlow     = "body_too_slow"
	reasonAddressBusy     = "address_busy"
	reasonToken           = "token"
	reasonSignature       = "signature"
	reasonStreamsToken    = "streams_per_token"
	reasonStreamsAll      = "streams_total"
	reasonLimitPrefix     = "limit_" // + the limit's name: limit_steps, limit_source_bytes, ...
	reasonWebhookPoolFull = "webhook_bodies"
	reasonAPIPoolFull     = "api_bodies"
)

// reasonPoolFull is the reason a body was refused for its pool being full.
func reasonPoolFull(p *bodyPool) string {
	if p.name == "webhook" {
		return reasonWebhookPoolFull
	}
	return reasonAPIPoolFull
}

// refusals counts requests refused for a client's fault or for the
// daemon's limits, and logs them at most once every 10 seconds for each
// reason, with the number refused since: an unauthenticated client can
// send thousands a second, and a line each (an ERROR, as once) would bury
// the log and fill its disk at the attacker's pace. A refusal is never an
// ERROR: nothing is wrong with the daemon.
type refusals struct {
	log     *slog.Logger
	now     func() time.Time
	counter *prometheus.CounterVec // nil without a registerer

	mu   sync.Mutex
	last map[string]time.Time
	held map[string]int
}

func newRefusals(log *slog.Logger, reg prometheus.Registerer, now func() time.Time) *refusals {
	r := &refusals{log: log, now: now, last: map[string]time.Time{}, held: map[string]int{}}
	if reg != nil {
		r.counter = prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rbd_http_refusals_total",
			Help: "Requests refused for a client's fault or the daemon's limits (bad tokens and signatures, bodies too large, slow or beyond the pools, limits), by reason.",
		}, []string{"reason"})
		reg.MustRegister(r.counter)
	}
	return r
}

// refused counts one refusal, and logs it unless one of the same reason
// was logged less than refusalLogEvery ago.
func (r *refusals) refused(req *http.Request, reason string, err *apiError) {
	if r.counter != nil {
		r.counter.WithLabelValues(reason).Inc()
	}
	r.mu.Lock()
	now := r.now()
	if last, ok := r.last[reason]; ok && now.Sub(last) < refusalLogEvery {
		r.held[reason]++
		r.mu.Unlock()
		return
	}
	held := r.held[reason]
	r.last[reason], r.held[reason] = now, 0
	r.mu.Unlock()
	r.log.Warn("request refused", "reason", reason, "status", err.status, "code", err.code, "message", err.message,
		"method", req.Method, "path", req.URL.Path, "remote", remoteHost(req), "held_back", held)
}

// refuse records a refusal of r for reason and returns err, marked so that
// the request's log line does not report it again.
func (s *Server) refuse(r *http.Request, reason string, err *apiError) *apiError {
	err.refused = true
	s.refusals.refused(r, reason, err)
	return err
}
