package runtime

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/runbookdev/runbook/compiler"
	"github.com/runbookdev/runbook/durable"
	"github.com/runbookdev/runbook/lang"
	"github.com/runbookdev/runbook/verbs"
)

// Errors the API reports; callers test with errors.Is.
var (
	// ErrNotFound: no such runbook or step.
	ErrNotFound = errors.New("not found")
	// ErrConflict: the request does not fit the runbook's state (approving
	// a step that does not wait for approval, extending a finished
	// runbook).
	ErrConflict = errors.New("conflict")
	// ErrInvalid: the request itself is wrong (bad inputs, bad mode).
	ErrInvalid = errors.New("invalid request")
)

// CompileError carries the diagnostics of a source that did not compile.
type CompileError struct {
	Diagnostics lang.Diagnostics
}

func (e *CompileError) Error() string {
	n, _ := e.Diagnostics.Count()
	return fmt.Sprintf("the source has %d errors", n)
}

// Submission is a runbook to start.
type Submission struct {
	Plan   *compiler.Plan
	Inputs map[string]any
	// Mode is ModeExecute (the default) or ModeDryRun.
	Mode string
	// IdempotencyKey dedupes submissions: a repeat with the same plan,
	// inputs and mode returns the existing runbook, and one with another
	// request is ErrConflict. Without it the runbook is keyed by its plan,
	// inputs and mode.
	IdempotencyKey string
	Actor          string
}

// Submitted says which runbook a submission started, and whether it was
// new (a repeat returns the existing runbook, whatever its state).
type Submitted struct {
	ID      uuid.UUID
	Created bool
	Status  string
}

// Submit stores a runbook and makes it due.
func (e *Engine) Submit(ctx context.Context, s Submission) (*Submitted, error) {
	if s.Mode == "" {
		s.Mode = ModeExecute
	}
	if s.Mode != ModeExecute && s.Mode != ModeDryRun {
		return nil, fmt.Errorf("%w: mode %q must be %q or %q", ErrInvalid, s.Mode, ModeExecute, ModeDryRun)
	}
	if s.Plan == nil {
		return nil, fmt.Errorf("%w: no plan", ErrInvalid)
	}
	if err := checkInputs(s.Plan.Inputs, s.Inputs, nil); err != nil {
		return nil, err
	}
	inputs, err := json.Marshal(orEmpty(s.Inputs))
	if err != nil {
		return nil, fmt.Errorf("%w: inputs do not marshal: %v", ErrInvalid, err)
	}
	key := s.IdempotencyKey
	if key == "" {
		sum := sha256.Sum256([]byte(s.Plan.PlanHash + "\x00" + s.Mode + "\x00" + string(inputs)))
		key = "plan:" + hex.EncodeToString(sum[:])
	}
	n := durable.NewRunbook{
		ID: RunbookIDFor(key), Plan: s.Plan.JSON(), PlanHash: s.Plan.PlanHash, Inputs: inputs, Mode: s.Mode,
		RequestKey: key, WorkerID: e.workerID, Steps: newSteps(s.Plan.Steps, 0), Edges: edgesOf(s.Plan.Edges, nil),
	}
	n.SubmittedData, _ = json.Marshal(map[string]any{"actor": s.Actor, "mode": s.Mode, "plan_hash": s.Plan.PlanHash})
	var out *Submitted
	err = e.store.InTx(ctx, func(tx *durable.Tx) error {
		rb, created, err := tx.CreateRunbook(ctx, n)
		if err != nil {
			return err
		}
		if !created && s.IdempotencyKey != "" && !sameRequest(rb, n) {
			return fmt.Errorf("%w: idempotency key %q was used for another request (a different plan, inputs or mode)",
				ErrConflict, s.IdempotencyKey)
		}
		out = &Submitted{ID: rb.ID, Created: created, Status: rb.Status}
		return nil
	})
	return out, err
}

// sameRequest reports whether an existing runbook was submitted with the
// same plan, inputs and mode as a repeat. Inputs are compared as values:
// the database keeps them as jsonb, which reorders keys.
func sameRequest(rb *durable.Runbook, n durable.NewRunbook) bool {
	if rb.PlanHash != n.PlanHash || rb.Mode != n.Mode {
		return false
	}
	had, err1 := decodeJSON(rb.Inputs)
	given, err2 := decodeJSON(n.Inputs)
	return err1 == nil && err2 == nil && reflect.DeepEqual(had, given)
}

// SubmitSource compiles a source with the engine's catalogue and submits
// it. A source with errors is a *CompileError carrying its diagnostics.
func (e *Engine) SubmitSource(ctx context.Context, filename string, source []byte, s Submission) (*Submitted, error) {
	if e.cfg.Catalogue == nil {
		return nil, fmt.Errorf("%w: this daemon has no verb catalogue to compile sources with", ErrInvalid)
	}
	plan, diags := compiler.CompileSource(filename, source, e.cfg.Catalogue)
	if diags.HasErrors() {
		return nil, &CompileError{Diagnostics: diags}
	}
	s.Plan = plan
	return e.Submit(ctx, s)
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// newSteps turns plan steps into rows, numbered after offset.
func newSteps(steps []*compiler.Step, offset int) []durable.NewStep {
	out := make([]durable.NewStep, len(steps))
	for i, s := range steps {
		args, _ := json.Marshal(s.Args)      // plan arguments are JSON values
		exec, _ := json.Marshal(s.Execution) // as is the execution block
		out[i] = durable.NewStep{Key: s.Key, Position: offset + i + 1, Verb: s.Verb, Args: args, Execution: exec, Gate: string(s.Gate)}
	}
	return out
}

// edgesOf converts plan edges, keeping only those into steps keep accepts
// (all when keep is nil).
func edgesOf(edges []compiler.Edge, keep func(to string) bool) []durable.Edge {
	var out []durable.Edge
	for _, e := range edges {
		if keep == nil || keep(e.To) {
			out = append(out, durable.Edge{From: e.From, To: e.To, Kind: e.Kind})
		}
	}
	return out
}

// checkInputs checks supplied inputs against the plan's: each is given
// (unless frozen already holds it), none is unknown, and each has its
// inferred type.
func checkInputs(declared []compiler.Input, given, frozen map[string]any) error {
	var problems []string
	known := map[string]compiler.Input{}
	for _, in := range declared {
		known[in.Name] = in
		v, ok := given[in.Name]
		if !ok {
			if _, had := frozen[in.Name]; !had {
				problems = append(problems, fmt.Sprintf("input $%s is missing", in.Name))
			}
			continue
		}
		if msg := inputTypeProblem(in, v); msg != "" {
			problems = append(problems, msg)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(given)) {
		if _, ok := known[name]; !ok {
			problems = append(problems, fmt.Sprintf("input $%s is not used by the runbook", name))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s", ErrInvalid, strings.Join(problems, "; "))
	}
	return nil
}

func inputTypeProblem(in compiler.Input, v any) string {
	if in.Type == "any" {
		return ""
	}
	want := strings.Split(in.Type, "|")
	have := verbs.JSONType(v)
	if !verbs.TypeAdmits(want, have) {
		return fmt.Sprintf("input $%s must be %s, not %s", in.Name, strings.Join(want, " or "), have)
	}
	if s, ok := v.(string); ok && in.Format == "uuid" {
		if _, err := uuid.Parse(s); err != nil {
			return fmt.Sprintf("input $%s must be a UUID", in.Name)
		}
	}
	return ""
}

// Notification is what an external process reports for a correlation key.
type Notification struct {
	CorrelationKey string
	// Status is "completed" or "failed".
	Status string
	Result json.RawMessage
	// ErrorCode and ErrorMessage describe a failure; a retryable code lets
	// the step retry.
	ErrorCode    string
	ErrorMessage string
}

// Notify stores a notification in the inbox and wakes the runbook waiting
// for it. A repeat with the same payload is a duplicate; the same key with
// another payload is a conflict and is refused.
func (e *Engine) Notify(ctx context.Context, n Notification) (durable.InboxResult, error) {
	if n.CorrelationKey == "" {
		return 0, fmt.Errorf("%w: correlation_key is required", ErrInvalid)
	}
	if n.Status != "completed" && n.Status != "failed" {
		return 0, fmt.Errorf("%w: status must be \"completed\" or \"failed\"", ErrInvalid)
	}
	if n.Status == "failed" && n.ErrorCode == "" {
		n.ErrorCode = CodeInternal
	}
	result, err := canonicalJSON(n.Result)
	if err != nil {
		return 0, fmt.Errorf("%w: result: %v", ErrInvalid, err)
	}
	payload, _ := json.Marshal(map[string]any{
		"status": n.Status, "result": result, "error_code": n.ErrorCode, "error_message": n.ErrorMessage,
	})
	return e.store.InsertNotification(ctx, durable.Notification{
		CorrelationKey: n.CorrelationKey, PayloadHash: hashJSON(payload), Outcome: n.Status,
		Result: n.Result, ErrorCode: n.ErrorCode, ErrorMessage: n.ErrorMessage,
	})
}

// canonicalJSON decodes and re-encodes JSON, so that two payloads that
// differ only in spacing or key order hash alike.
func canonicalJSON(b json.RawMessage) (any, error) {
	if len(b) == 0 {
		return nil, nil
	}
	return decodeJSON(b)
}

// Decide records a person's decision on a gate: an approval lets the step
// run; a rejection fails it with POLICY_DENIED.
func (e *Engine) Decide(ctx context.Context, runbookID uuid.UUID, stepKey string, approve bool, by, comment string) error {
	return e.locked(ctx, runbookID, func(tx *durable.Tx, rb *durable.Runbook, steps []*durable.Step) error {
		var s *durable.Step
		for _, st := range steps {
			if st.Key == stepKey {
				s = st
			}
		}
		if s == nil {
			return fmt.Errorf("%w: runbook %s has no step %q", ErrNotFound, runbookID, stepKey)
		}
		if s.Status != StepWaitingApproval {
			return fmt.Errorf("%w: step %q is %s, not waiting for approval", ErrConflict, stepKey, s.Status)
		}
		now := time.Now()
		s.GateDecidedBy, s.GateDecidedAt, s.GateComment = by, &now, comment
		data, _ := json.Marshal(map[string]any{"by": by, "comment": comment})
		event := durable.Event{RunbookID: runbookID, StepKey: s.Key, Attempt: s.Attempt, WorkerID: e.workerID, Data: data}
		events := []durable.Event{}
		if approve {
			s.GateDecision, s.Status = "approved", StepReady
			event.Type = EventGateApproved
			events = append(events, event)
		} else {
			s.GateDecision, s.Status, s.FinishedAt = "rejected", StepFailed, &now
			s.ErrorCode, s.ErrorMessage = CodePolicyDenied, "rejected by "+by
			event.Type = EventGateRejected
			failed := event
			failed.Type = EventStepFailed
			failed.Data, _ = json.Marshal(map[string]any{"code": CodePolicyDenied, "message": s.ErrorMessage})
			events = append(events, event, failed)
		}
		if err := tx.UpdateSteps(ctx, []durable.StepChange{durable.ChangeOf(s)}); err != nil {
			return err
		}
		if err := tx.AppendEvents(ctx, events); err != nil {
			return err
		}
		return tx.Wake(ctx, []uuid.UUID{runbookID})
	})
}

// Cancel stops a runbook: its active invocations are cancelled, every step
// not yet final is cancelled, and later notifications for it are kept and
// ignored. Completed work stays readable. Cancelling a cancelled runbook
// is a no-op; a finished one is a conflict.
func (e *Engine) Cancel(ctx context.Context, runbookID uuid.UUID, by string) error {
	return e.locked(ctx, runbookID, func(tx *durable.Tx, rb *durable.Runbook, steps []*durable.Step) error {
		switch rb.Status {
		case RunbookCancelled:
			return nil
		case RunbookExecuting:
		default:
			return fmt.Errorf("%w: runbook %s is already %s", ErrConflict, runbookID, rb.Status)
		}
		invs, err := tx.ActiveInvocations(ctx, []uuid.UUID{runbookID})
		if err != nil {
			return err
		}
		ids := make([]uuid.UUID, len(invs))
		for i, inv := range invs {
			ids[i] = inv.InvocationID
		}
		if err := tx.FinishInvocations(ctx, ids, "cancelled"); err != nil {
			return err
		}
		now := time.Now()
		var changes []durable.StepChange
		var events []durable.Event
		for _, s := range steps {
			if stepDone(s.Status) {
				continue
			}
			s.Status, s.FinishedAt, s.NextAttemptAt = StepCancelled, &now, nil
			changes = append(changes, durable.ChangeOf(s))
			events = append(events, durable.Event{RunbookID: runbookID, Type: EventStepCancelled, StepKey: s.Key, Attempt: s.Attempt, WorkerID: e.workerID})
		}
		data, _ := json.Marshal(map[string]any{"by": by})
		events = append(events, durable.Event{RunbookID: runbookID, Type: EventRunbookCancelled, WorkerID: e.workerID, Data: data})
		if err := tx.UpdateSteps(ctx, changes); err != nil {
			return err
		}
		if err := tx.AppendEvents(ctx, events); err != nil {
			return err
		}
		status, code, msg := RunbookCancelled, CodeCancelled, "cancelled by "+by
		return tx.UpdateRunbook(ctx, durable.RunbookChange{
			ID: runbookID, Status: &status, ErrorCode: &code, ErrorMessage: &msg, Finished: true, SetWake: true,
		})
	})
}

// Extension is more source for a running runbook.
type Extension struct {
	Filename string
	Source   []byte
	// Inputs supplies the inputs the new calls use that the runbook does
	// not have yet; inputs it has cannot change.
	Inputs map[string]any
	Actor  string
}

// Extended says what an extension added.
type Extended struct {
	Steps   []string
	Version int
}

// Extend compiles new calls against a running runbook's frozen plan and
// appends them, with their edges, logged in the runbook's mutations. The
// new calls may use the existing steps' results; existing steps never
// change, and a runbook that has finished cannot grow.
func (e *Engine) Extend(ctx context.Context, runbookID uuid.UUID, x Extension) (*Extended, error) {
	if e.cfg.Catalogue == nil {
		return nil, fmt.Errorf("%w: this daemon has no verb catalogue to compile sources with", ErrInvalid)
	}
	var out *Extended
	err := e.locked(ctx, runbookID, func(tx *durable.Tx, rb *durable.Runbook, steps []*durable.Step) error {
		if rb.Status != RunbookExecuting {
			return fmt.Errorf("%w: runbook %s is %s; only a running runbook can be extended", ErrConflict, runbookID, rb.Status)
		}
		raw, err := tx.Plans(ctx, []uuid.UUID{runbookID})
		if err != nil {
			return err
		}
		base, err := compiler.DecodePlan(raw[runbookID])
		if err != nil {
			return err
		}
		plan, diags := compiler.ExtendSource(base, x.Filename, x.Source, e.cfg.Catalogue)
		if diags.HasErrors() {
			return &CompileError{Diagnostics: diags}
		}
		existing := map[string]bool{}
		for _, s := range base.Steps {
			existing[s.Key] = true
		}
		var added []*compiler.Step
		for _, s := range plan.Steps {
			if !existing[s.Key] {
				added = append(added, s)
			}
		}
		for _, edge := range plan.Edges {
			if existing[edge.To] && !slices.Contains(base.Edges, edge) {
				return fmt.Errorf("%w: the extension would add a dependency to step %q, which exists already", ErrConflict, edge.To)
			}
		}
		frozen := map[string]any{}
		if v, err := decodeJSON(rb.Inputs); err == nil {
			frozen, _ = v.(map[string]any)
		}
		for name := range x.Inputs {
			if _, had := frozen[name]; had {
				return fmt.Errorf("%w: input $%s is set already and cannot change", ErrInvalid, name)
			}
		}
		if err := checkInputs(plan.Inputs, x.Inputs, frozen); err != nil {
			return err
		}
		inputs := maps.Clone(orEmpty(frozen))
		maps.Copy(inputs, x.Inputs)
		inputsJSON, _ := json.Marshal(inputs)

		if err := tx.AddSteps(ctx, runbookID, newSteps(added, len(base.Steps))); err != nil {
			return err
		}
		if err := tx.InsertEdges(ctx, runbookID, edgesOf(plan.Edges, func(to string) bool { return !existing[to] })); err != nil {
			return err
		}
		keys := make([]string, len(added))
		for i, s := range added {
			keys[i] = s.Key
		}
		payload, _ := json.Marshal(map[string]any{"source": x.Filename, "steps": keys, "plan_hash": plan.PlanHash, "version": rb.Version + 1})
		if err := tx.AppendMutation(ctx, durable.Mutation{RunbookID: runbookID, Actor: x.Actor, Kind: "extend", Payload: payload}); err != nil {
			return err
		}
		if err := tx.AppendEvents(ctx, []durable.Event{{RunbookID: runbookID, Type: EventRunbookExtended, WorkerID: e.workerID, Data: payload}}); err != nil {
			return err
		}
		if err := tx.UpdateRunbook(ctx, durable.RunbookChange{
			ID: runbookID, Plan: plan.JSON(), PlanHash: plan.PlanHash, Version: rb.Version + 1, Inputs: inputsJSON,
		}); err != nil {
			return err
		}
		out = &Extended{Steps: keys, Version: rb.Version + 1}
		return tx.Wake(ctx, []uuid.UUID{runbookID})
	})
	return out, err
}

// locked runs fn under the runbook's lock with its state loaded.
func (e *Engine) locked(ctx context.Context, id uuid.UUID, fn func(*durable.Tx, *durable.Runbook, []*durable.Step) error) error {
	err := e.store.InTx(ctx, func(tx *durable.Tx) error {
		if err := tx.LockRunbooks(ctx, []uuid.UUID{id}); err != nil {
			return err
		}
		rb, err := tx.Runbook(ctx, id)
		if err != nil {
			return err
		}
		steps, err := tx.Steps(ctx, []uuid.UUID{id})
		if err != nil {
			return err
		}
		return fn(tx, rb, steps)
	})
	if errors.Is(err, durable.ErrNotFound) {
		return fmt.Errorf("%w: no runbook %s", ErrNotFound, id)
	}
	return err
}
