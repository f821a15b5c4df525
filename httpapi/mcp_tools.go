package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strconv"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/rbtype"
)

// APIRequest is one request to the API, as an MCP tool makes it: a
// method, a path with its query, headers, and a JSON body or nil.
type APIRequest struct {
	Method string
	Path   string
	Header http.Header
	Body   []byte
}

// APIResponse is the API's answer, whatever its status.
type APIResponse struct {
	StatusCode int
	Body       []byte
}

// APICaller carries a request to the API and brings back its answer; an
// error means no answer came. The daemon's /mcp passes its requests
// through its own routes, in process; rbd mcp sends them to a daemon with
// the Go client. Either way a tool is checked, answered and counted
// exactly as its route is.
type APICaller func(ctx context.Context, req *APIRequest) (*APIResponse, error)

// ViaHeader marks a request an MCP tool makes ("Rbd-Via: mcp"): the
// daemon refuses a gate decision so marked unless it runs with
// --mcp-approvals.
const ViaHeader = "Rbd-Via"

// MCPOptions shape the MCP server of rbd's tools.
type MCPOptions struct {
	// Approvals adds the approve and reject tools (rbd serve
	// --mcp-approvals).
	Approvals bool
	// By names who acts, for the requests whose body says (submit's
	// actor, a decision's by): the token's actor.
	By string
	// Version is reported to clients as the server's.
	Version string
	// SchemaCache, shared by servers made for each request, saves
	// working out the tools' schemas again.
	SchemaCache *mcp.SchemaCache
}

// mcpInstructions tell an agent how the tools fit together.
const mcpInstructions = `These tools drive runbooks on an rbd daemon. Write a runbook, check it
with rbc's tools (lint, fix, effects), then submit it here. A step with a
gate waits for a person; a parked step waits for a notification. Read
next_actions to see what would move a runbook, and status to see where it
is. Every tool answers the HTTP API's JSON; a refusal is an error result
with the API's code (FORBIDDEN, NOT_FOUND, CONFLICT, COMPILE_FAILED with
diagnostics, ...) and its HTTP status.`

// NewMCPServer returns an MCP server whose tools call the API through
// call: submit, status, events, next_actions, retry, regenerate, cancel,
// extend, close, notify, costs, whoami, verbs, and approve and reject with
// opts.Approvals (docs/reference/mcp.md).
func NewMCPServer(call APICaller, opts MCPOptions) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "rbd", Title: "Runbook daemon", Version: opts.Version},
		&mcp.ServerOptions{Instructions: mcpInstructions, SchemaCache: opts.SchemaCache})
	t := &tools{call: call, by: opts.By, approvals: opts.Approvals}
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)}
	acts := func(destructive, idempotent bool) *mcp.ToolAnnotations {
		return &mcp.ToolAnnotations{DestructiveHint: ptr(destructive), IdempotentHint: idempotent, OpenWorldHint: ptr(true)}
	}

	addTool(srv, "whoami", readOnly, "Reads who this connection's token speaks for on the daemon: its tenant, its actor, its roles, "+
		"the verbs it may use (verbs, globs), the riskiest step it may submit (max_risk), and whether gates may be decided "+
		"through MCP (mcp_approvals). Changes nothing.", t.whoami)
	addTool(srv, "verbs", readOnly, "Reads the verbs this token may use, or the one verb named: each verb's input and output schemas, "+
		"kind, side effects, risk, execution level, gate and policy tags: what a runbook calling it may do to the world; and what "+
		"the tenant's policy does with it (policy.action: gate, a person must approve each step; deny, a runbook calling it is "+
		"refused; auto_exec, it runs unattended; none). Changes nothing.", t.verbs)
	addTool(srv, "submit", acts(true, true), "Submits a runbook (source, or a plan compiled by rbc) to the daemon, which compiles "+
		"it with its verbs and starts it: each step then does what its verb does to the world (check first with rbc's effects tool). "+
		"A step with a gate waits for a person; draft_only mode holds back every step with an outside effect; dry_run simulates. "+
		"Answers {id, status, created}. A source that does not compile is an error result with its diagnostics, and nothing starts. "+
		"The same idempotency_key (or, without one, the same source, inputs and mode) answers the runbook the first call made "+
		"instead of starting another.", t.submit)
	addTool(srv, "status", readOnly, "Reads a runbook: its status and state, every step's state, attempt, result and error, its "+
		"outcomes, what it is blocked on, its failures and next actions. Changes nothing.", t.status)
	addTool(srv, "events", readOnly, "Reads a page of a runbook's event ledger, oldest first, after an event id: a full page "+
		"means more follow. Changes nothing.", t.events)
	addTool(srv, "next_actions", readOnly, "Reads what would move a runbook now: what it is blocked on (a gate, a notification "+
		"with its correlation key, a timer, a failure), its failures, and each next action (approve, notify, retry, resolve, "+
		"close) this token may take, with its step, the tool call and the rbd command that do it; what would move it but "+
		"only another token may take (a gate of another group, a risk above this token's max_risk, a role it lacks) is in "+
		"unavailable_actions, each with its reason. Changes nothing.", t.nextActions)
	addTool(srv, "retry", acts(true, false), "Runs a failed, partial or escalated runbook again from where it stopped: its "+
		"failed, skipped, cancelled and escalated steps (or those named) go back to pending and run, with the idempotency keys "+
		"they had, so an effect that already happened returns its receipt and is not repeated. With execute, a finished "+
		"draft_only runbook runs the steps it held back, for real: their outside effects happen.", t.retry)
	addTool(srv, "regenerate", acts(true, true), "Starts a new runbook from a finished one's plan and inputs (those given "+
		"override them): steps that change nothing outside run afresh; steps with outside effects keep their parent's "+
		"idempotency keys, so an effect that happened (a send) is not done again.", t.regenerate)
	addTool(srv, "cancel", acts(true, true), "Cancels a runbook: its steps that have not finished are cancelled and its "+
		"waits ended (an outside process may be asked to stop), and the compensations of its completed steps run, undoing "+
		"what it did, unless no_compensate is set.", t.cancel)
	addTool(srv, "extend", acts(true, false), "Adds calls to a running runbook (executing, or held open): the source is "+
		"compiled against its plan, so new calls may use its steps' results, and the new steps run as soon as they are ready, "+
		"doing what their verbs do to the world.", t.extend)
	addTool(srv, "close", acts(false, true), "Lets a runbook submitted with hold_open finish once its steps have ended. Adds "+
		"and runs nothing itself.", t.close)
	addTool(srv, "notify", acts(true, true), "Delivers the outside world's answer for a parked step's correlation key (read "+
		"it from next_actions): completed with a result, failed with an error code, or a heartbeat that extends the wait. The "+
		"step resumes and the runbook goes on to the steps after it, which may have effects of their own. The same payload "+
		"again changes nothing; another payload for the same key is refused (CONFLICT): the first stands.", t.notify)
	addTool(srv, "costs", readOnly, "Reads what the tenant's step attempts used (cost, credits, tokens, attempts, cache hits), "+
		"summed by tenant, actor, verb, day or month. Changes nothing.", t.costs)
	if opts.Approvals {
		addTool(srv, "approve", acts(true, false), "Approves a step waiting at its gate, as this token's actor: the step "+
			"runs now and does what its verb does to the world. A gate exists so that someone decides: approve only what "+
			"you were asked to.", t.approve)
		addTool(srv, "reject", acts(true, false), "Rejects a step waiting at its gate: the step fails with POLICY_DENIED "+
			"and the runbook goes on as its on_failure says (by default it stops, and its compensations run).", t.reject)
	}
	return srv
}

func ptr[T any](v T) *T { return &v }

// toolSchemas types json.RawMessage as any JSON value, which the schema
// inference would otherwise take for an array of bytes.
var toolSchemas = &jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
	reflect.TypeFor[json.RawMessage](): {},
}}

// enums lists the values an argument of a tool may take, by its JSON name.
var enums = map[string][]any{
	"mode":     {string(rbtype.ModeExecute), string(rbtype.ModeDryRun), string(rbtype.ModeDraftOnly)},
	"status":   {string(rbtype.OutcomeCompleted), string(rbtype.OutcomeFailed), string(rbtype.OutcomeHeartbeat)},
	"group_by": {"tenant", "actor", "verb", "day", "month"},
}

// addTool adds a tool whose arguments are In: their schema (from In's
// fields, json and jsonschema tags) is checked before h runs, so a missing
// or mistyped argument is an error naming it, and h never sees it.
func addTool[In any](srv *mcp.Server, name string, ann *mcp.ToolAnnotations, desc string, h mcp.ToolHandlerFor[In, any]) {
	schema, err := jsonschema.For[In](toolSchemas)
	if err != nil {
		panic(fmt.Sprintf("httpapi: the %s tool's arguments: %v", name, err))
	}
	for prop, values := range enums {
		if p, ok := schema.Properties[prop]; ok && p.Type == "string" {
			p.Enum = values
		}
	}
	mcp.AddTool(srv, &mcp.Tool{Name: name, Description: desc, Annotations: ann, InputSchema: schema}, h)
}

// tools are rbd's tools, each a request to one route of the API.
type tools struct {
	call APICaller
	by   string
	// approvals says the approve and reject tools exist here.
	approvals bool
}

// do makes a tool's request and turns the answer into its result: the
// API's JSON, or, for a refusal, an error result holding the API's error
// and the HTTP status ({"status": 403, "error": {"code", "message"}}).
func (t *tools) do(ctx context.Context, method, path string, header http.Header, body any) (*mcp.CallToolResult, any, error) {
	req := &APIRequest{Method: method, Path: path, Header: header}
	if req.Header == nil {
		req.Header = http.Header{}
	}
	req.Header.Set(ViaHeader, "mcp")
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return nil, nil, err
		}
		req.Body = raw
	}
	resp, err := t.call(ctx, req)
	if err != nil {
		return nil, nil, fmt.Errorf("the daemon did not answer %s %s: %w", method, path, err)
	}
	if resp.StatusCode >= 300 {
		return &mcp.CallToolResult{IsError: true}, refusal(resp), nil
	}
	if !json.Valid(resp.Body) {
		return nil, nil, fmt.Errorf("the daemon answered %s %s with something that is not JSON", method, path)
	}
	return nil, json.RawMessage(resp.Body), nil
}

// refusal is an error answer as a tool's structured result.
func refusal(resp *APIResponse) map[string]any {
	out := map[string]any{"status": resp.StatusCode}
	var body struct {
		Error json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(resp.Body, &body); err == nil && len(body.Error) > 0 {
		out["error"] = body.Error
	} else {
		out["error"] = map[string]string{"code": http.StatusText(resp.StatusCode), "message": string(resp.Body)}
	}
	return out
}

// runbook is /v1/runbooks/{id} and what follows, escaped.
func runbook(id string, rest ...string) string {
	p := "/v1/runbooks/" + url.PathEscape(id)
	for _, r := range rest {
		p += "/" + url.PathEscape(r)
	}
	return p
}

// keyed is the header of a request that may carry an Idempotency-Key.
func keyed(key string) http.Header {
	h := http.Header{}
	if key != "" {
		h.Set(IdempotencyKeyHeader, key)
	}
	return h
}

type noArgs struct{}

func (t *tools) whoami(ctx context.Context, _ *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, any, error) {
	return t.do(ctx, http.MethodGet, "/v1/whoami", nil, nil)
}

type verbsArgs struct {
	Name string `json:"name,omitempty" jsonschema:"one verb's name (domain.name); empty: every verb"`
}

func (t *tools) verbs(ctx context.Context, _ *mcp.CallToolRequest, in verbsArgs) (*mcp.CallToolResult, any, error) {
	path := "/v1/verbs"
	if in.Name != "" {
		path += "?name=" + url.QueryEscape(in.Name)
	}
	return t.do(ctx, http.MethodGet, path, nil, nil)
}

type submitArgs struct {
	Source         string          `json:"source,omitempty" jsonschema:"the runbook's text; give source or plan"`
	Plan           json.RawMessage `json:"plan,omitempty" jsonschema:"a plan as rbc's compile tool gives it; give source or plan"`
	Filename       string          `json:"filename,omitempty" jsonschema:"names the source in diagnostics (default submitted.rbk)"`
	Inputs         map[string]any  `json:"inputs,omitempty" jsonschema:"the runbook's $inputs, by name"`
	Mode           string          `json:"mode,omitempty" jsonschema:"execute (the default), draft_only (no step with an outside effect runs) or dry_run (every step simulated)"`
	HoldOpen       bool            `json:"hold_open,omitempty" jsonschema:"keep the runbook in_progress after its steps end, for extend, until close"`
	IdempotencyKey string          `json:"idempotency_key,omitempty" jsonschema:"a repeat with this key answers the runbook the first call made"`
	NewLineage     bool            `json:"new_lineage,omitempty" jsonschema:"start a fresh lineage even if the same plan and inputs failed before (whose lineage it would join, returning the receipts of effects that happened): effects may repeat"`
	Budget         *rbtype.Budget  `json:"budget,omitempty" jsonschema:"the runbook's own budget ({cost_usd, tokens, credits}), which may only lower the tenant's: a step that would start past it fails BUDGET_EXCEEDED"`
}

func (t *tools) submit(ctx context.Context, _ *mcp.CallToolRequest, in submitArgs) (*mcp.CallToolResult, any, error) {
	if in.Source == "" && len(in.Plan) == 0 {
		return nil, nil, fmt.Errorf(`give "source" (the runbook's text) or "plan" (a compiled plan)`)
	}
	body := apitype.SubmitRequest{Source: in.Source, Plan: in.Plan, Filename: in.Filename, Inputs: in.Inputs,
		Mode: rbtype.Mode(in.Mode), HoldOpen: in.HoldOpen, Actor: t.by, Budget: in.Budget, NewLineage: in.NewLineage}
	return t.do(ctx, http.MethodPost, "/v1/runbooks", keyed(in.IdempotencyKey), body)
}

type idArgs struct {
	ID string `json:"id" jsonschema:"the runbook's id (a UUID), as submit answered it"`
}

func (t *tools) status(ctx context.Context, _ *mcp.CallToolRequest, in idArgs) (*mcp.CallToolResult, any, error) {
	return t.do(ctx, http.MethodGet, runbook(in.ID), nil, nil)
}

type eventsArgs struct {
	ID    string `json:"id" jsonschema:"the runbook's id (a UUID)"`
	After int64  `json:"after,omitempty" jsonschema:"only the events after this event id (0: from the first)"`
	Limit int    `json:"limit,omitempty" jsonschema:"at most this many events, 1 to 10000 (default 1000)"`
}

func (t *tools) events(ctx context.Context, _ *mcp.CallToolRequest, in eventsArgs) (*mcp.CallToolResult, any, error) {
	q := url.Values{"after": {strconv.FormatInt(in.After, 10)}}
	if in.Limit != 0 {
		q.Set("limit", strconv.Itoa(in.Limit))
	}
	return t.do(ctx, http.MethodGet, runbook(in.ID, "events")+"?"+q.Encode(), nil, nil)
}

// nextActions reads the runbook's view, as status does, and keeps what
// says what would move it.
func (t *tools) nextActions(ctx context.Context, req *mcp.CallToolRequest, in idArgs) (*mcp.CallToolResult, any, error) {
	res, out, err := t.do(ctx, http.MethodGet, runbook(in.ID), nil, nil)
	if err != nil || res != nil {
		return res, out, err
	}
	var view apitype.RunbookView
	if err := json.Unmarshal(out.(json.RawMessage), &view); err != nil {
		return nil, nil, fmt.Errorf("the daemon's view of %s does not decode: %w", in.ID, err)
	}
	next := apitype.MCPNextActions{ID: view.ID.String(), Status: string(view.Status), State: string(view.State),
		BlockedOn: view.BlockedOn, Failures: view.Failures, NextActions: []apitype.MCPAction{},
		UnavailableActions: view.UnavailableActions}
	if next.UnavailableActions == nil {
		next.UnavailableActions = []apitype.ActionView{}
	}
	for _, a := range view.NextActions {
		next.NextActions = append(next.NextActions, apitype.MCPAction{ActionView: a, Tool: t.toolCall(a)})
	}
	return nil, next, nil
}

// toolCall is the call of this server's tool that takes an action, or nil
// where no tool takes it (a resolution, which a person makes with rbd
// resolve or the console; a gate, where approvals through MCP are off).
func (t *tools) toolCall(a apitype.ActionView) *apitype.ToolCall {
	id := a.Args.RunbookID.String()
	switch a.Kind {
	case apitype.ActionApprove:
		if !t.approvals {
			return nil
		}
		return &apitype.ToolCall{Name: "approve", Arguments: map[string]any{"id": id, "step": a.Step}}
	case apitype.ActionNotify:
		return &apitype.ToolCall{Name: "notify", Arguments: map[string]any{"correlation_key": a.Args.CorrelationKey, "status": "completed", "result": map[string]any{}}}
	case apitype.ActionRetry:
		args := map[string]any{"id": id, "steps": []string{a.Step}}
		if a.Args.Execute {
			args["execute"] = true
		}
		return &apitype.ToolCall{Name: "retry", Arguments: args}
	case apitype.ActionClose:
		return &apitype.ToolCall{Name: "close", Arguments: map[string]any{"id": id}}
	}
	return nil
}

type retryArgs struct {
	ID      string   `json:"id" jsonschema:"the runbook's id (a UUID)"`
	Steps   []string `json:"steps,omitempty" jsonschema:"the steps to retry; empty: every failed, skipped, cancelled and escalated step"`
	Execute bool     `json:"execute,omitempty" jsonschema:"run a finished draft_only runbook's held-back steps for real"`
}

func (t *tools) retry(ctx context.Context, _ *mcp.CallToolRequest, in retryArgs) (*mcp.CallToolResult, any, error) {
	return t.do(ctx, http.MethodPost, runbook(in.ID, "retry"), nil, apitype.RetryRequest{Steps: in.Steps, Execute: in.Execute, By: t.by})
}

type regenerateArgs struct {
	ID             string         `json:"id" jsonschema:"the finished runbook's id (a UUID)"`
	Inputs         map[string]any `json:"inputs,omitempty" jsonschema:"inputs that override the parent's, by name"`
	IdempotencyKey string         `json:"idempotency_key,omitempty" jsonschema:"a repeat with this key answers the runbook the first call made"`
}

func (t *tools) regenerate(ctx context.Context, _ *mcp.CallToolRequest, in regenerateArgs) (*mcp.CallToolResult, any, error) {
	return t.do(ctx, http.MethodPost, runbook(in.ID, "regenerate"), keyed(in.IdempotencyKey), apitype.RegenerateRequest{Inputs: in.Inputs, By: t.by})
}

type cancelArgs struct {
	ID           string `json:"id" jsonschema:"the runbook's id (a UUID)"`
	NoCompensate bool   `json:"no_compensate,omitempty" jsonschema:"leave what the completed steps did as it is; by default their compensations run"`
}

func (t *tools) cancel(ctx context.Context, _ *mcp.CallToolRequest, in cancelArgs) (*mcp.CallToolResult, any, error) {
	req := apitype.CancelRequest{By: t.by}
	if in.NoCompensate {
		no := false
		req.Compensate = &no
	}
	return t.do(ctx, http.MethodPost, runbook(in.ID, "cancel"), nil, req)
}

type extendArgs struct {
	ID       string         `json:"id" jsonschema:"the running runbook's id (a UUID)"`
	Source   string         `json:"source" jsonschema:"the calls to add, as runbook text"`
	Filename string         `json:"filename,omitempty" jsonschema:"names the source in diagnostics (default extension.rbk)"`
	Inputs   map[string]any `json:"inputs,omitempty" jsonschema:"inputs the new calls use that the runbook does not have yet"`
}

func (t *tools) extend(ctx context.Context, _ *mcp.CallToolRequest, in extendArgs) (*mcp.CallToolResult, any, error) {
	return t.do(ctx, http.MethodPost, runbook(in.ID, "steps"), nil, apitype.ExtendRequest{Source: in.Source, Filename: in.Filename, Inputs: in.Inputs, Actor: t.by})
}

func (t *tools) close(ctx context.Context, _ *mcp.CallToolRequest, in idArgs) (*mcp.CallToolResult, any, error) {
	return t.do(ctx, http.MethodPost, runbook(in.ID, "close"), nil, apitype.CloseRequest{By: t.by})
}

type notifyArgs struct {
	CorrelationKey string             `json:"correlation_key" jsonschema:"the parked step's correlation key, from next_actions or status"`
	Status         string             `json:"status" jsonschema:"completed, failed or heartbeat"`
	Result         json.RawMessage    `json:"result,omitempty" jsonschema:"with completed: the step's result, which must fit its verb's output schema"`
	Error          *apitype.ErrorView `json:"error,omitempty" jsonschema:"with failed: the error's code (which decides whether the step retries) and message"`
	Extend         string             `json:"extend,omitempty" jsonschema:"with heartbeat: an ISO 8601 duration (P2D) to move the wait's timeout to"`
}

func (t *tools) notify(ctx context.Context, _ *mcp.CallToolRequest, in notifyArgs) (*mcp.CallToolResult, any, error) {
	return t.do(ctx, http.MethodPost, "/v1/notifications", nil, apitype.NotificationRequest{
		CorrelationKey: in.CorrelationKey, Status: rbtype.NotificationOutcome(in.Status), Result: in.Result, Error: in.Error, Extend: in.Extend,
	})
}

type costsArgs struct {
	GroupBy string `json:"group_by,omitempty" jsonschema:"tenant, actor, verb (the default), day or month"`
	From    string `json:"from,omitempty" jsonschema:"only attempts finished at or after this RFC 3339 time or date"`
	To      string `json:"to,omitempty" jsonschema:"only attempts finished before this RFC 3339 time or date"`
}

func (t *tools) costs(ctx context.Context, _ *mcp.CallToolRequest, in costsArgs) (*mcp.CallToolResult, any, error) {
	q := url.Values{}
	for k, v := range map[string]string{"group_by": in.GroupBy, "from": in.From, "to": in.To} {
		if v != "" {
			q.Set(k, v)
		}
	}
	path := "/v1/costs"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	return t.do(ctx, http.MethodGet, path, nil, nil)
}

type decisionArgs struct {
	ID      string `json:"id" jsonschema:"the runbook's id (a UUID)"`
	Step    string `json:"step" jsonschema:"the key of the step waiting at its gate"`
	Comment string `json:"comment,omitempty" jsonschema:"why, for the ledger"`
}

func (t *tools) approve(ctx context.Context, _ *mcp.CallToolRequest, in decisionArgs) (*mcp.CallToolResult, any, error) {
	return t.do(ctx, http.MethodPost, runbook(in.ID, "steps", in.Step, "approve"), nil, apitype.DecisionRequest{By: t.by, Comment: in.Comment})
}

func (t *tools) reject(ctx context.Context, _ *mcp.CallToolRequest, in decisionArgs) (*mcp.CallToolResult, any, error) {
	return t.do(ctx, http.MethodPost, runbook(in.ID, "steps", in.Step, "reject"), nil, apitype.DecisionRequest{By: t.by, Comment: in.Comment})
}
