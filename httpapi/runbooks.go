package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"unicode"

	"github.com/google/uuid"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/machine"
	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/runtime"
)

// IdempotencyKeyHeader dedupes submissions.
const IdempotencyKeyHeader = "Idempotency-Key"

// maxIdempotencyKey bounds the header: it becomes part of a database key.
const maxIdempotencyKey = machine.MaxKeyLength

// submit is POST /v1/runbooks: 201 for a new runbook, 200 for a repeat of
// an earlier submission (same Idempotency-Key, or same plan, inputs and
// mode without one), 422 for a source that does not compile or a plan
// that does not match this daemon's catalogue.
func (s *Server) submit(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(w, r, s.cfg.MaxBody)
	if err != nil {
		return err
	}
	var req apitype.SubmitRequest
	if err := decodeJSON(body, &req, false); err != nil {
		return err
	}
	from, err := originOf(r)
	if err != nil {
		return err
	}
	sub := runtime.Submission{Inputs: req.Inputs, Mode: req.Mode, IdempotencyKey: from.idempotencyKey, Actor: req.Actor, Name: req.Name, HoldOpen: req.HoldOpen,
		Parent: from.parent, CorrelationID: from.correlationID, Budget: req.Budget, NewLineage: req.NewLineage}
	var out *apitype.Submitted
	switch {
	case req.Source != "" && len(req.Plan) > 0:
		return errorf(http.StatusBadRequest, CodeInvalidRequest, `give "source" or "plan", not both`)
	case req.Source != "":
		filename := req.Filename
		if filename == "" {
			filename = "submitted.rbk"
		}
		out, err = s.engine.SubmitSource(r.Context(), filename, []byte(req.Source), sub)
	case len(req.Plan) > 0:
		filename := req.Filename
		if filename == "" {
			filename = "plan.json"
		}
		out, err = s.engine.SubmitPlan(r.Context(), filename, req.Plan, sub)
		// A refused plan keeps its own code; its diagnostics have the
		// shape a source's have.
		if ce := (*runtime.CompileError)(nil); errors.As(err, &ce) && len(ce.Diagnostics) > 0 {
			msg := "the plan cannot be run: " + ce.Diagnostics[0].Text()
			if more := len(ce.Diagnostics) - 1; more > 0 {
				msg += fmt.Sprintf(" (and %d more problems; see diagnostics)", more)
			}
			return &apiError{status: http.StatusUnprocessableEntity, code: CodeInvalidPlan, message: msg, diagnostics: ce.Diagnostics}
		}
	default:
		return errorf(http.StatusBadRequest, CodeInvalidRequest, `the body needs "source" (runbook text) or "plan" (a compiled plan)`)
	}
	if err != nil {
		return err
	}
	lineage := out.Lineage
	resp := apitype.SubmitResponse{ID: out.ID, Status: out.Status, Created: out.Created, Name: out.Name, Lineage: &lineage,
		JoinedFailed: out.JoinedFailed, EffectsMayRepeat: out.NewLineage}
	switch {
	case !out.Created:
		resp.Message = apitype.AlreadySubmitted(out.ID, out.Status)
	case out.JoinedFailed != nil:
		resp.Message = runtime.JoinedMessage(*out.JoinedFailed, lineage.Root, lineage.Generation)
	case out.NewLineage:
		resp.Message = runtime.NewLineageMessage
	}
	writeMaybeCreated(w, out.Created, out.ID, resp)
	return nil
}

// writeMaybeCreated answers a request that may have made a runbook: 201
// with its Location when it did, 200 when an earlier request had.
func writeMaybeCreated(w http.ResponseWriter, created bool, id uuid.UUID, body any) {
	status := http.StatusOK
	if created {
		status = http.StatusCreated
		w.Header().Set("Location", "/v1/runbooks/"+id.String())
	}
	writeJSON(w, status, body)
}

// byOf names who acts on a request: its "by" when it says, else the
// token's actor (token-<n> for a token whose line names none, anonymous
// on an open API). "by" is optional everywhere (docs/design/semantics.md
// section 10); a token that names its actor is recorded as that actor
// whatever "by" says, which is kept as a note (runtime's actorOf).
// recordedActor is who the engine records as acting for a request that
// says by: the token's actor when its line names one (the engine's
// actorOf), else byOf.
func recordedActor(r *http.Request, by string) string {
	if p := principalOf(r); p.NamedActor {
		return p.Actor
	}
	return byOf(r, by)
}

func byOf(r *http.Request, by string) string {
	if by == "" {
		return principalOf(r).Actor
	}
	return by
}

// idempotencyKeyOf reads and checks a request's Idempotency-Key header
// ("" when there is none).
func idempotencyKeyOf(r *http.Request) (string, error) {
	key := r.Header.Get(IdempotencyKeyHeader)
	if len(key) > maxIdempotencyKey {
		return "", errorf(http.StatusBadRequest, CodeInvalidRequest, "the %s header is longer than %d bytes", IdempotencyKeyHeader, maxIdempotencyKey)
	}
	for _, c := range key {
		if !unicode.IsPrint(c) {
			return "", errorf(http.StatusBadRequest, CodeInvalidRequest, "the %s header holds a control character", IdempotencyKeyHeader)
		}
	}
	return key, nil
}

// runbookRequest reads what a POST on a runbook carries: the {id} of the
// path and the JSON body, which may be empty when optional.
func runbookRequest[T any](s *Server, w http.ResponseWriter, r *http.Request, optional bool) (uuid.UUID, T, error) {
	var req T
	id, err := runbookID(r)
	if err != nil {
		return id, req, err
	}
	body, err := readBody(w, r, s.cfg.MaxBody)
	if err != nil {
		return id, req, err
	}
	return id, req, decodeJSON(body, &req, optional)
}

// runbookID reads the {id} of the path.
func runbookID(r *http.Request) (uuid.UUID, error) {
	raw := r.PathValue("id")
	id, err := uuid.Parse(raw)
	if err != nil {
		return uuid.Nil, errorf(http.StatusBadRequest, CodeInvalidRequest, "%q is not a runbook id (a UUID)", raw)
	}
	return id, nil
}

// get is GET /v1/runbooks/{id}.
func (s *Server) get(w http.ResponseWriter, r *http.Request) error {
	id, err := runbookID(r)
	if err != nil {
		return err
	}
	after, err := queryInt(r, "steps_after", 0, 0, 1<<31-1)
	if err != nil {
		return err
	}
	limit, err := queryInt(r, "steps_limit", apitype.DefaultViewSteps, 1, apitype.MaxViewSteps)
	if err != nil {
		return err
	}
	view, err := s.engine.GetPage(r.Context(), id, driver.StepPage{After: int(after), Limit: int(limit)})
	if err != nil {
		return err
	}
	view.NextActions, view.UnavailableActions = offerByRole(principalOf(r), view.NextActions, view.UnavailableActions)
	writeJSON(w, http.StatusOK, view)
	return nil
}

// list is GET /v1/runbooks?status=&state=&needs_person=&tenant=&limit=&after=.
func (s *Server) list(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	limit := 0
	if raw := q.Get("limit"); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 1 || n > 1000 {
			return errorf(http.StatusBadRequest, CodeInvalidRequest, "limit %q must be a number from 1 to 1000", raw)
		}
		limit = n
	}
	lq := runtime.ListQuery{Status: rbtype.RunbookStatus(q.Get("status")), State: q.Get("state"), Tenant: q.Get("tenant"),
		Limit: limit, After: q.Get("after")}
	if raw := q.Get("needs_person"); raw != "" {
		needs, err := strconv.ParseBool(raw)
		if err != nil {
			return errorf(http.StatusBadRequest, CodeInvalidRequest, "needs_person %q must be true or false", raw)
		}
		lq.NeedsPerson = &needs
	}
	page, err := s.engine.List(r.Context(), lq)
	if err != nil {
		return err
	}
	p := principalOf(r)
	for i := range page.Runbooks {
		sum := &page.Runbooks[i]
		sum.NextActions, sum.UnavailableActions = offerByRole(p, sum.NextActions, sum.UnavailableActions)
	}
	writeJSON(w, http.StatusOK, apitype.ListResponse{Runbooks: page.Runbooks, Next: page.Next})
	return nil
}

// cancel is POST /v1/runbooks/{id}/cancel.
func (s *Server) cancel(w http.ResponseWriter, r *http.Request) error {
	id, req, err := runbookRequest[apitype.CancelRequest](s, w, r, true)
	if err != nil {
		return err
	}
	o := runtime.CancelOptions{By: byOf(r, req.By), Compensate: req.Compensate == nil || *req.Compensate}
	if err := s.engine.CancelWith(r.Context(), id, o); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, apitype.CancelResponse{ID: id, Status: rbtype.RunbookCancelled})
	return nil
}

// resolve is POST /v1/runbooks/{id}/steps/{key}/resolve.
func (s *Server) resolve(w http.ResponseWriter, r *http.Request) error {
	id, req, err := runbookRequest[apitype.ResolveRequest](s, w, r, false)
	if err != nil {
		return err
	}
	key := r.PathValue("key")
	if err := s.engine.Resolve(r.Context(), id, key, machine.Resolution{Action: req.Action, Result: req.Result, By: byOf(r, req.By)}); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, apitype.ResolveResponse{ID: id, Step: key, Action: req.Action})
	return nil
}

// close is POST /v1/runbooks/{id}/close.
func (s *Server) close(w http.ResponseWriter, r *http.Request) error {
	id, req, err := runbookRequest[apitype.CloseRequest](s, w, r, true)
	if err != nil {
		return err
	}
	if err := s.engine.Close(r.Context(), id, byOf(r, req.By)); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, apitype.CancelResponse{ID: id, Status: rbtype.RunbookExecuting})
	return nil
}

// retry is POST /v1/runbooks/{id}/retry.
func (s *Server) retry(w http.ResponseWriter, r *http.Request) error {
	id, req, err := runbookRequest[apitype.RetryRequest](s, w, r, true)
	if err != nil {
		return err
	}
	res, err := s.engine.Retry(r.Context(), id, machine.RetryOptions{Steps: req.Steps, By: byOf(r, req.By), Execute: req.Execute})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, apitype.RetryResponse{ID: id, Status: rbtype.RunbookExecuting, Steps: res.Steps})
	return nil
}

// regenerate is POST /v1/runbooks/{id}/regenerate.
func (s *Server) regenerate(w http.ResponseWriter, r *http.Request) error {
	id, req, err := runbookRequest[apitype.RegenerateRequest](s, w, r, true)
	if err != nil {
		return err
	}
	from, err := originOf(r)
	if err != nil {
		return err
	}
	out, err := s.engine.Regenerate(r.Context(), id, runtime.Regeneration{Inputs: req.Inputs, IdempotencyKey: from.idempotencyKey,
		Actor: byOf(r, req.By), Parent: from.parent, CorrelationID: from.correlationID})
	if err != nil {
		return err
	}
	writeMaybeCreated(w, out.Created, out.ID, apitype.RegenerateResponse{ID: out.ID, Status: out.Status, Created: out.Created, Lineage: out.Lineage})
	return nil
}

func (s *Server) approve(w http.ResponseWriter, r *http.Request) error { return s.decide(w, r, true) }
func (s *Server) reject(w http.ResponseWriter, r *http.Request) error  { return s.decide(w, r, false) }

// decide is POST /v1/runbooks/{id}/steps/{key}/approve and /reject.
func (s *Server) decide(w http.ResponseWriter, r *http.Request, approve bool) error {
	id, req, err := runbookRequest[apitype.DecisionRequest](s, w, r, true)
	if err != nil {
		return err
	}
	if fromMCP(r) && !s.cfg.MCPApprovals {
		return errorf(http.StatusForbidden, CodeForbidden,
			"gates are not decided through MCP on this daemon (rbd serve --mcp-approvals): a gate exists so that a person decides")
	}
	key := r.PathValue("key")
	if err := s.engine.Decide(r.Context(), id, key, approve, byOf(r, req.By), req.Comment); err != nil {
		return err
	}
	decision := rbtype.GateRejected
	if approve {
		decision = rbtype.GateApproved
	}
	writeJSON(w, http.StatusOK, apitype.DecisionResponse{ID: id, Step: key, Decision: decision, By: recordedActor(r, req.By)})
	return nil
}

// extend is POST /v1/runbooks/{id}/steps.
func (s *Server) extend(w http.ResponseWriter, r *http.Request) error {
	id, req, err := runbookRequest[apitype.ExtendRequest](s, w, r, false)
	if err != nil {
		return err
	}
	if req.Source == "" {
		return errorf(http.StatusBadRequest, CodeInvalidRequest, `"source" is required: the calls to add`)
	}
	if req.Filename == "" {
		req.Filename = "extension.rbk"
	}
	out, err := s.engine.Extend(r.Context(), id, runtime.Extension{
		Filename: req.Filename, Source: []byte(req.Source), Inputs: req.Inputs, Actor: req.Actor,
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, apitype.ExtendResponse{ID: id, Steps: out.Steps, Version: out.Version})
	return nil
}
