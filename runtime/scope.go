package runtime

import (
	"context"
	"errors"

	"github.com/google/uuid"

	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/registry/policy"
)

// DefaultTenant is rbtype.DefaultTenant: it owns the runbooks of a token that names no tenant.
const DefaultTenant = rbtype.DefaultTenant

// Scope is whose runbooks a request may see and change: one tenant's, or,
// for an admin, every tenant's. The HTTP API puts the caller's scope in
// each request's context; a context without one (the engine's own work,
// tools and tests in the same process) is not restricted.
type Scope struct {
	Tenant string
	// All lets an admin see every tenant; Tenant, if set, is then the
	// tenant its submissions belong to.
	All bool
	// Actor, when the token names one, is who the ledger records as
	// having acted, whatever a request's "by" says.
	Actor string
	// Verbs are the verbs the token may use (a token line's verbs=
	// globs); nil allows every verb. A plan naming another is refused
	// (docs/design/semantics.md section 10).
	Verbs policy.VerbScope `json:",omitempty"`
	// MaxRisk is the riskiest step the token may submit, and the riskiest
	// whose gate it may decide; empty means high. An admin decides any.
	MaxRisk rbtype.Risk `json:",omitempty"`
	// Token is the fingerprint of the API token the request came with
	// (never the token itself), "" without tokens: a schedule keeps it,
	// so that only that token (or an admin) changes the schedule, and its
	// ticks run under what that token may do then (Config.TokenScope).
	Token string `json:",omitempty"`
	// Groups are the token's groups (groups=): a gate whose step names
	// :approvers is decided only by a token of that group, or an admin
	// (docs/design/language.md v1.4).
	Groups []string `json:",omitempty"`
}

// maxRisk is the scope's risk ceiling: high unless the token says less.
func (s Scope) maxRisk() rbtype.Risk {
	if s.MaxRisk == "" || s.All {
		return rbtype.RiskHigh
	}
	return s.MaxRisk
}

type scopeKey struct{}

// WithScope returns a context whose requests are limited to scope.
func WithScope(ctx context.Context, s Scope) context.Context {
	return context.WithValue(ctx, scopeKey{}, s)
}

// scopeOf is the context's scope, if it has one.
func scopeOf(ctx context.Context) (Scope, bool) {
	s, ok := ctx.Value(scopeKey{}).(Scope)
	return s, ok
}

// tenantOf is the tenant a submission in ctx belongs to.
func tenantOf(ctx context.Context) string {
	if s, ok := scopeOf(ctx); ok && s.Tenant != "" {
		return s.Tenant
	}
	return DefaultTenant
}

// actorOf is who a request in ctx acted as, and what it claimed when that
// differs (kept as a note): the token's actor when the token names one
// (docs/design/semantics.md section 1), else the claim, as before tokens had actors.
func actorOf(ctx context.Context, claimed string) (by, note string) {
	if s, ok := scopeOf(ctx); ok && s.Actor != "" {
		if claimed != "" && claimed != s.Actor {
			return s.Actor, claimed
		}
		return s.Actor, ""
	}
	return claimed, ""
}

// sees reports whether ctx may see a runbook of tenant. Another tenant's
// runbook is answered as if it did not exist (404), never as forbidden,
// so that ids do not leak across tenants.
func sees(ctx context.Context, tenant string) bool {
	s, ok := scopeOf(ctx)
	return !ok || s.All || s.Tenant == tenant || (s.Tenant == "" && tenant == DefaultTenant)
}

// listTenant is the tenant a listing is limited to: the caller's, or for
// an admin the one asked for ("" for all).
func listTenant(ctx context.Context, asked string) string {
	s, ok := scopeOf(ctx)
	switch {
	case !ok || s.All:
		return asked
	case s.Tenant == "":
		return DefaultTenant
	}
	return s.Tenant
}

// visibleRunbook loads runbook id for a reader. It is ErrNotFound, with
// suggestions, both when there is no such runbook and when ctx may not see
// it: another tenant's runbook must look exactly like a missing one.
func (e *Engine) visibleRunbook(ctx context.Context, id uuid.UUID) (*driver.Runbook, error) {
	rb, err := visibleRunbookIn(ctx, e.reader(ctx), id)
	if errors.Is(err, driver.ErrNotFound) {
		return nil, e.noRunbook(ctx, id)
	}
	return rb, err
}

// visibleRunbookIn loads runbook id for a reader through r (a view's
// snapshot): driver.ErrNotFound, bare, both when there is no such
// runbook and when ctx may not see it. The caller words it (noRunbook)
// once the snapshot is closed, so that a view holds one connection at a
// time.
func visibleRunbookIn(ctx context.Context, r driver.ViewReader, id uuid.UUID) (*driver.Runbook, error) {
	rb, err := r.Runbook(ctx, id)
	if err != nil {
		return nil, err
	}
	if !sees(ctx, rb.Tenant) {
		return nil, driver.ErrNotFound
	}
	return rb, nil
}
