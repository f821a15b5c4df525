package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// service is the external system the runbooks call: it records every
// effect by idempotency key, as a payment provider or a ticketing system
// that honours Idempotency-Key would, and completes durable tasks by
// signed webhook. What it records is what the checks compare the ledger
// with, so it keeps everything, including what should never happen (one
// key carrying two different requests).
type service struct {
	url      string
	srv      *http.Server
	notifier *notifier

	mu      sync.Mutex
	rng     *rand.Rand
	effects map[string]*effect  // by idempotency key
	byStep  map[string][]string // "run/step" → the idempotency keys it came with
	byID    map[string]*effect  // by effect id
	tasks   map[string]*task    // by correlation key
	cancels map[string]int      // correlation key → cancel requests
	misuse  []string            // requests that break the idempotency contract

	faultMode atomic.Int32 // a serviceFault: how requests are answered now
	requests  atomic.Int64
	replays   atomic.Int64 // requests repeating a recorded key
	failed    atomic.Int64 // answered 500 by a fault
	hung      atomic.Int64 // held by a fault
	rejected  atomic.Int64 // answered 422 because the step asked to be refused
}

// effect is one side effect: the first request with its idempotency key.
type effect struct {
	ID         string
	Key        string
	Run, Step  string
	Prev       string // the effect id the step was given as its predecessor's
	BodyHash   string
	Deliveries int // requests with this key, the first included
}

// task is a durable step's work, started by http.start and completed by a
// notification.
type task struct {
	effect         *effect
	correlationKey string
	hold           bool // never completed: the runbook is cancelled instead
	variant        string
}

// serviceFault is how the service misbehaves for a while.
type serviceFault int32

const (
	serviceHealthy serviceFault = iota
	// serviceErrors answers half the requests 500, some after recording
	// the effect (the answer lost, the work done), as real providers do.
	serviceErrors
	// serviceHangs holds requests longer than the verbs' run timeout, some
	// after recording the effect.
	serviceHangs
)

// hangFor outlasts the verbs' run_timeout (PT2S), so a hung call times out.
const hangFor = 3 * time.Second

func newService(seed uint64, n *notifier) (*service, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &service{
		url:      "http://" + ln.Addr().String(),
		notifier: n,
		rng:      rand.New(rand.NewPCG(seed, 0x5e41ce)),
		effects:  map[string]*effect{},
		byStep:   map[string][]string{},
		byID:     map[string]*effect{},
		tasks:    map[string]*task{},
		cancels:  map[string]int{},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /effect", s.handleEffect)
	mux.HandleFunc("POST /task", s.handleTask)
	mux.HandleFunc("POST /cancel", s.handleCancel)
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

func (s *service) close() { _ = s.srv.Close() }

// effectRequest is what the effect verb sends (its arguments).
type effectRequest struct {
	Run  string `json:"run"`
	Step string `json:"step"`
	Prev string `json:"prev"`
	Mode string `json:"mode"`
}

// taskRequest is what http.start sends.
type taskRequest struct {
	CorrelationKey string `json:"correlation_key"`
	CallbackURL    string `json:"callback_url"`
	Args           struct {
		Run  string `json:"run"`
		Step string `json:"step"`
		Prev string `json:"prev"`
		Hold bool   `json:"hold"`
	} `json:"args"`
}

// latency is how long the service takes over a request, up to 250 ms:
// a call is in flight long enough that a worker killed at a random moment
// often holds some, which is what makes its leases be reclaimed.
func (s *service) latency() {
	s.mu.Lock()
	d := time.Duration(s.rng.IntN(250)) * time.Millisecond
	s.mu.Unlock()
	time.Sleep(d)
}

// fault decides, before and after the work, whether this request fails:
// before means nothing happened, after means the work was done and only
// the answer is lost.
func (s *service) fault() (before, after bool) {
	mode := serviceFault(s.faultMode.Load())
	if mode == serviceHealthy {
		return false, false
	}
	s.mu.Lock()
	r := s.rng.IntN(4)
	s.mu.Unlock()
	return r == 0, r == 1
}

// begin takes the service's time over a request and carries out a fault
// that strikes before the work; answered says the request was answered
// by it, after that a fault is due once the work is done.
func (s *service) begin(w http.ResponseWriter, r *http.Request) (after, answered bool) {
	s.latency()
	before, after := s.fault()
	return after, before && s.misbehave(w, r)
}

// misbehave carries out a fault on w; true when the request was answered.
func (s *service) misbehave(w http.ResponseWriter, r *http.Request) bool {
	switch serviceFault(s.faultMode.Load()) {
	case serviceErrors:
		s.failed.Add(1)
		http.Error(w, "injected failure", http.StatusInternalServerError)
		return true
	case serviceHangs:
		s.hung.Add(1)
		select {
		case <-time.After(hangFor):
		case <-r.Context().Done():
		}
		http.Error(w, "injected hang", http.StatusServiceUnavailable)
		return true
	}
	return false
}

func (s *service) handleEffect(w http.ResponseWriter, r *http.Request) {
	var req effectRequest
	body, key, ok := s.readRequest(w, r, &req)
	if !ok {
		return
	}
	after, answered := s.begin(w, r)
	if answered {
		return
	}
	if req.Mode == "reject" {
		// The step asked to be refused: a final 4xx, never an effect.
		s.rejected.Add(1)
		http.Error(w, "refused, as the runbook asked", http.StatusUnprocessableEntity)
		return
	}
	e := s.record(key, req.Run, req.Step, req.Prev, body)
	if after && s.misbehave(w, r) {
		return
	}
	writeJSONBody(w, map[string]any{"effect_id": e.ID})
}

func (s *service) handleTask(w http.ResponseWriter, r *http.Request) {
	var req taskRequest
	body, key, ok := s.readRequest(w, r, &req)
	if !ok {
		return
	}
	if req.CorrelationKey == "" || req.CallbackURL == "" {
		http.Error(w, "a task needs correlation_key and callback_url", http.StatusBadRequest)
		return
	}
	after, answered := s.begin(w, r)
	if answered {
		return
	}
	e := s.record(key, req.Args.Run, req.Args.Step, req.Args.Prev, body)
	s.mu.Lock()
	t, seen := s.tasks[req.CorrelationKey]
	if !seen {
		t = &task{effect: e, correlationKey: req.CorrelationKey, hold: req.Args.Hold}
		if !t.hold {
			t.variant = variants[s.rng.IntN(len(variants))]
		}
		s.tasks[req.CorrelationKey] = t
	}
	delay := time.Duration(100+s.rng.IntN(3000)) * time.Millisecond
	s.mu.Unlock()
	if !seen && !t.hold {
		result := map[string]any{"effect_id": e.ID}
		if t.variant == variantEarly {
			// Before answering the start: the step has not parked yet, so
			// the notification must wait in the inbox for its park.
			s.notifier.deliver(req.CallbackURL, t.correlationKey, result, t.variant)
		} else {
			s.notifier.later(delay, req.CallbackURL, t.correlationKey, result, t.variant)
		}
	}
	if after && s.misbehave(w, r) {
		return
	}
	writeJSONBody(w, map[string]any{"id": "ext-" + e.ID})
}

// handleCancel records that a cancelled runbook asked the work to stop.
func (s *service) handleCancel(w http.ResponseWriter, r *http.Request) {
	var req struct {
		CorrelationKey string `json:"correlation_key"`
	}
	if _, _, ok := s.readRequest(w, r, &req); !ok {
		return
	}
	s.mu.Lock()
	s.cancels[req.CorrelationKey]++
	s.mu.Unlock()
	writeJSONBody(w, map[string]any{"cancelled": true})
}

// record makes the effect of a request, once per idempotency key. A
// repeat with the same body is a replay (the stored answer again); with
// another body it breaks the contract, and so does one step coming with a
// second key: either would be a second effect where one was meant.
func (s *service) record(key, run, step, prev string, body []byte) *effect {
	sum := sha256.Sum256(body)
	hash := hex.EncodeToString(sum[:])
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.effects[key]; ok {
		e.Deliveries++
		s.replays.Add(1)
		if e.BodyHash != hash {
			s.misuse = append(s.misuse, fmt.Sprintf("idempotency key %s came with two different requests (run %s, step %s)", key, run, step))
		}
		return e
	}
	e := &effect{ID: fmt.Sprintf("e%d", len(s.effects)+1), Key: key, Run: run, Step: step, Prev: prev, BodyHash: hash, Deliveries: 1}
	s.effects[key] = e
	s.byID[e.ID] = e
	id := run + "/" + step
	s.byStep[id] = append(s.byStep[id], key)
	if len(s.byStep[id]) > 1 {
		s.misuse = append(s.misuse, fmt.Sprintf("step %s of run %s made %d effects, under keys %v", step, run, len(s.byStep[id]), s.byStep[id]))
	}
	return e
}

// readRequest counts a request and reads its body into v; it answers 400
// itself, and ok is false, when the request has no Idempotency-Key or
// its body is not v's JSON.
func (s *service) readRequest(w http.ResponseWriter, r *http.Request, v any) (body []byte, key string, ok bool) {
	s.requests.Add(1)
	key = r.Header.Get("Idempotency-Key")
	if key == "" {
		http.Error(w, "Idempotency-Key is required", http.StatusBadRequest)
		return nil, "", false
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err == nil {
		err = json.Unmarshal(body, v)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return nil, "", false
	}
	return body, key, true
}

func writeJSONBody(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
