package runtime

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/trace"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/compiler"
	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/machine"
	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/verbs"
)

// Submission is a runbook to start.
type Submission struct {
	Plan   *compiler.Plan
	Inputs map[string]any
	// Mode is ModeExecute (the default) or ModeDryRun.
	Mode rbtype.Mode
	// IdempotencyKey dedupes submissions: a repeat with the same plan,
	// inputs and mode returns the existing runbook, and one with another
	// request is ErrConflict. Without it the runbook is keyed by its plan,
	// inputs and mode, for as long as that runbook has not failed.
	IdempotencyKey string
	Actor          string
	// Name is the runbook's name for people; empty, its source file's
	// name without the extension (see nameOf). It is a label, not part of
	// the request: a repeat with another name is the same runbook.
	Name string
	// HoldOpen keeps the runbook in_progress after its steps finish, while
	// an agent still adds steps, until Close (docs/design/semantics.md section 8).
	HoldOpen bool
	// Parent is the submitter's span (a W3C traceparent and tracestate):
	// the runbook's span is its child, in its trace. Invalid (the zero
	// value) begins a trace of the runbook's own (docs/design/semantics.md section 2).
	Parent trace.SpanContext
	// CorrelationID is the submitter's X-Correlation-Id; it defaults to
	// the runbook's id. At most MaxCorrelationID printable bytes.
	CorrelationID string
	// Budget is the runbook's own budget, which may only lower the
	// tenant's runbook budget (docs/design/semantics.md section 11); nil
	// for none.
	Budget *rbtype.Budget
	// NewLineage starts a fresh lineage even when the same plan and inputs
	// failed before: without it, a submission after a failure joins the
	// failed runbook's lineage (resubmit.go). Effects may then repeat.
	NewLineage bool
}

// Submit stores a runbook and makes it due.
//
// A submission without an IdempotencyKey is keyed by its plan, mode and
// inputs, and a repeat returns the runbook they started, until that one
// fails (docs/design/semantics.md section 6): then the same plan and inputs run again,
// as a new runbook keyed after the failed one. Concurrent repeats derive
// the same key and so meet on one row.
func (e *Engine) Submit(ctx context.Context, s Submission) (*apitype.Submitted, error) {
	n, err := e.newRunbook(ctx, s)
	if err != nil {
		return nil, err
	}
	var out *apitype.Submitted
	err = inTx(ctx, e.store, func(tx driver.Tx) error {
		out, err = e.createRunbook(ctx, tx, n, s.IdempotencyKey)
		return err
	})
	if err == nil && s.NewLineage && out.Created {
		out.NewLineage = true
	}
	if err == nil && out.Created {
		e.wakeUp(out.ID) // a new runbook is due at once
	}
	return out, err
}

// newRunbook checks a submission and makes the row it stores, in ctx's
// tenant and for its actor.
func (e *Engine) newRunbook(ctx context.Context, s Submission) (driver.NewRunbook, error) {
	if s.Mode == "" {
		s.Mode = rbtype.ModeExecute
	}
	if !slices.Contains(rbtype.Modes, s.Mode) {
		return driver.NewRunbook{}, fmt.Errorf("%w: mode %q must be %q, %q or %q", rbtype.ErrInvalid, s.Mode, rbtype.ModeExecute, rbtype.ModeDryRun, rbtype.ModeDraftOnly)
	}
	if s.Plan == nil {
		return driver.NewRunbook{}, fmt.Errorf("%w: no plan", rbtype.ErrInvalid)
	}
	if err := machine.CheckSteps(e.cfg.Limits, len(s.Plan.Steps)); err != nil {
		return driver.NewRunbook{}, err
	}
	plan := s.Plan.JSON()
	if err := machine.CheckPlanBytes(e.cfg.Limits, plan); err != nil {
		return driver.NewRunbook{}, err
	}
	if problem := machine.CheckCorrelationID(s.CorrelationID); problem != "" {
		return driver.NewRunbook{}, fmt.Errorf("%w: the correlation id %s", rbtype.ErrInvalid, problem)
	}
	if s.Name != "" {
		if problem := CheckName(s.Name); problem != "" {
			return driver.NewRunbook{}, fmt.Errorf("%w: the name %s", rbtype.ErrInvalid, problem)
		}
	}
	if err := checkInputs(s.Plan.Inputs, s.Inputs, nil); err != nil {
		return driver.NewRunbook{}, err
	}
	if err := checkInputsFit(s.Plan, s.Inputs); err != nil {
		return driver.NewRunbook{}, err
	}
	if err := checkInputLists(s.Plan, s.Inputs, e.cfg.MaxFanout); err != nil {
		return driver.NewRunbook{}, err
	}
	inputs, err := json.Marshal(orEmpty(s.Inputs))
	if err != nil {
		return driver.NewRunbook{}, fmt.Errorf("%w: inputs do not marshal: %v", rbtype.ErrInvalid, err)
	}
	tenant := tenantOf(ctx)
	adm, err := e.admit(ctx, tenant, s.Plan, s.Plan.Steps)
	if err != nil {
		return driver.NewRunbook{}, err
	}
	if err := checkMode(adm.tenant, s.Mode); err != nil {
		return driver.NewRunbook{}, err
	}
	if err := e.checkBudget(ctx, adm.tenant, s.Budget); err != nil {
		return driver.NewRunbook{}, err
	}
	key := s.IdempotencyKey
	if key == "" && s.NewLineage {
		// A fresh request: no failed runbook is found under it to join.
		key = "new:" + uuid.NewString()
	}
	if key == "" {
		material := s.Plan.PlanHash + "\x00" + string(s.Mode) + "\x00" + string(inputs)
		if s.HoldOpen {
			material += "\x00hold_open" // held open is another request
		}
		// Under another policy, or with another budget, the same plan is
		// another request (docs/design/semantics.md section 10).
		material += "\x00policy:" + adm.tenant.Hash()
		if s.Budget != nil {
			b, _ := json.Marshal(s.Budget) // numbers only
			material += "\x00budget:" + string(b)
		}
		sum := sha256.Sum256([]byte(material))
		key = "plan:" + hex.EncodeToString(sum[:])
	}
	key = tenantKey(tenant, key)
	steps, err := machine.NewSteps(s.Plan.Steps, 0)
	if err != nil {
		return driver.NewRunbook{}, fmt.Errorf("%w: %v", rbtype.ErrInvalid, err)
	}
	adm.gate(steps)
	n := driver.NewRunbook{
		Tenant: tenant, Plan: plan, PlanHash: s.Plan.PlanHash, Inputs: inputs, Mode: s.Mode,
		Status: rbtype.RunbookExecuting, RequestKey: key, WorkerID: e.workerID, Steps: steps, Edges: machine.EdgesOf(s.Plan.Edges, nil), EdgesInPlan: true,
		Trace: machine.NewTrace(s.Parent, s.CorrelationID), PolicyHash: adm.tenant.Hash(), Budget: s.Budget, Events: adm.events,
		Name: nameOf(s.Name, s.Plan), Scope: submitterScope(ctx),
	}
	if s.HoldOpen {
		n.Status = rbtype.RunbookInProgress
	}
	actor, note := actorOf(ctx, s.Actor)
	n.Actor = actor
	n.SubmittedData, err = json.Marshal(machine.RunbookSubmittedData{Actor: actor, Note: note, Mode: s.Mode, PlanHash: s.Plan.PlanHash, HoldOpen: s.HoldOpen,
		PolicyHash: adm.tenant.Hash(), Budget: s.Budget})
	return n, err
}

// createRunbook stores a new runbook under its request key, in tx, with
// the id the key derives. A repeat returns the runbook the key names;
// without a caller's key, a repeat of a failed run starts a new run, keyed
// after the failed one; a caller's key (callerKey, as the caller wrote it)
// used for another request is ErrConflict.
func (e *Engine) createRunbook(ctx context.Context, tx driver.Tx, n driver.NewRunbook, callerKey string) (*apitype.Submitted, error) {
	d, err := e.derivationIn(ctx, tx)
	if err != nil {
		return nil, err
	}
	key := n.RequestKey
	n.ID = d.RunbookID(key)
	// A submission (not a regeneration, which has a lineage already)
	// that comes after a failed run joins its lineage (resubmit.go).
	joins, events := n.Lineage.Parent == uuid.Nil, n.Events
	var joined *driver.Runbook
	for {
		rb, created, err := tx.CreateRunbook(ctx, n)
		if err != nil {
			return nil, err
		}
		if !created && callerKey == "" && rb.Status == rbtype.RunbookFailed {
			n.RequestKey = retryKey(key, rb.ID)
			n.ID = d.RunbookID(n.RequestKey)
			if joins && rb.Tenant == cmp.Or(n.Tenant, DefaultTenant) {
				if err := e.joinFailedLineage(ctx, tx, &n, rb, events); err != nil {
					return nil, err
				}
				joined = rb
			}
			continue
		}
		if !created && rb.Tenant != cmp.Or(n.Tenant, DefaultTenant) {
			// Keys are in their tenant's namespace (tenantKey), so another
			// tenant's runbook under this key is a row written otherwise
			// (by hand, or before namespaces): never answer with it, nor
			// say whose it is.
			return nil, fmt.Errorf("%w: the request key %s is taken; submit with another Idempotency-Key", rbtype.ErrConflict, machine.ShortKey(key))
		}
		if !created && callerKey != "" && !sameRequest(rb, n) {
			return nil, fmt.Errorf("%w: idempotency key %q was used for another request (a different plan, inputs or mode)",
				rbtype.ErrConflict, callerKey)
		}
		out := &apitype.Submitted{ID: rb.ID, Created: created, Status: rb.Status, Lineage: lineageView(rb), Name: rb.Name}
		if joined != nil && rb.Lineage.Parent == joined.ID {
			out.JoinedFailed = &joined.ID
		}
		return out, nil
	}
}

// tenantKey scopes a request key to its tenant (docs/design/semantics.md
// section 1): every tenant's keys, the default tenant's included, live in a
// namespace of their own, "tenant:<name>:", so no key one tenant chooses
// can spell another's (a tenant name holds no colon). Keys stored before
// the default tenant had its prefix were given it by migration 017.
func tenantKey(tenant, key string) string {
	if tenant == "" {
		tenant = DefaultTenant
	}
	return "tenant:" + tenant + ":" + key
}

// retryKey is the request key of the run of a plan and inputs that comes
// after a failed run of them.
func retryKey(key string, failed uuid.UUID) string { return key + ":after:" + failed.String() }

// sameRequest reports whether an existing runbook was submitted with the
// same plan, inputs and mode as a repeat. Inputs are compared as values:
// the database keeps them as jsonb, which reorders keys.
func sameRequest(rb *driver.Runbook, n driver.NewRunbook) bool {
	if rb.PlanHash != n.PlanHash || rb.Mode != n.Mode {
		return false
	}
	had, err1 := rbtype.DecodeJSON(rb.Inputs)
	given, err2 := rbtype.DecodeJSON(n.Inputs)
	return err1 == nil && err2 == nil && reflect.DeepEqual(had, given)
}

// SubmitSource compiles a source with the engine's catalogue and submits
// it. A source with errors is a *CompileError carrying its diagnostics.
func (e *Engine) SubmitSource(ctx context.Context, filename string, source []byte, s Submission) (*apitype.Submitted, error) {
	if e.cfg.Catalogue == nil {
		return nil, fmt.Errorf("%w: this daemon has no verb catalogue to compile sources with", rbtype.ErrInvalid)
	}
	if err := machine.CheckSourceBytes(e.cfg.Limits, source); err != nil {
		return nil, err
	}
	opts, cat, outside := e.scopedCompile(ctx, e.compileOptions())
	plan, diags := opts.CompileSource(filename, source, cat)
	if err := outside(); err != nil {
		return nil, err
	}
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
		return fmt.Errorf("%w: %s", rbtype.ErrInvalid, strings.Join(problems, "; "))
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

// checkInputsFit checks each input against the schemas of the arguments it
// is passed to whole (`:email $contact`), as the step's own check would
// after the steps before it ran: an address that is not an email is
// refused at the door, not after the runbook has done half its work.
func checkInputsFit(plan *compiler.Plan, inputs map[string]any) error {
	var problems []string
	seen := map[string]bool{}
	for _, s := range plan.Steps {
		info, ok := plan.Verbs[s.Verb]
		if !ok || info.InputSchema == nil {
			continue
		}
		for _, arg := range slices.Sorted(maps.Keys(s.Args)) {
			ref, ok := s.Args[arg].(map[string]any)
			if !ok || len(ref) != 1 {
				continue
			}
			name, ok := ref[compiler.InputKey].(string)
			if !ok {
				continue
			}
			v, given := inputs[name]
			if !given || seen[name+"\x00"+s.Verb+"\x00"+arg] {
				continue
			}
			seen[name+"\x00"+s.Verb+"\x00"+arg] = true
			if err := info.InputSchema.ValidateProperty(arg, v); err != nil {
				problems = append(problems, fmt.Sprintf("input $%s, passed to %s's argument %s (step %q): %v", name, s.Verb, arg, s.Key, err))
			}
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s", rbtype.ErrSchema, strings.Join(problems, "; "))
	}
	return nil
}

// compileOptions are the compiler's options in this daemon: lists written
// out are held to its --max-fanout, as lists known at run time are.
func (e *Engine) compileOptions() compiler.Options {
	return compiler.Options{MaxFanout: e.cfg.MaxFanout, MaxPlanBytes: e.cfg.Limits.MaxPlanBytes}
}

// checkInputLists refuses a submission whose for-each runs over an input
// that is not a list, or holds more than maxFanout elements: the runbook
// would fail with FANOUT_TOO_LARGE before it did anything, and nothing
// of it is stored instead (docs/runtime.md, "For-each").
func checkInputLists(plan *compiler.Plan, inputs map[string]any, maxFanout int) error {
	var problems []string
	for _, l := range plan.Loops {
		m, ok := l.List.(map[string]any)
		if !ok || l.Within != "" {
			continue
		}
		ref, ok := m[compiler.InputKey].(string)
		if !ok || len(m) != 1 {
			continue
		}
		v, err := (&machine.Binder{Inputs: inputs}).Input(ref)
		if err != nil {
			continue // a missing input is reported by checkInputs
		}
		switch items, ok := v.([]any); {
		case !ok:
			problems = append(problems, fmt.Sprintf("input $%s, the list of (for-each ... :as @%s), is %s, not a list", ref, l.Item, machine.KindOf(v)))
		case len(items) > maxFanout:
			problems = append(problems, fmt.Sprintf("%s: input $%s, the list of (for-each ... :as @%s), holds %d elements, more than %d (--max-fanout)",
				rbtype.CodeFanoutTooLarge, ref, l.Item, len(items), maxFanout))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s", rbtype.ErrInvalid, strings.Join(problems, "; "))
	}
	return nil
}
