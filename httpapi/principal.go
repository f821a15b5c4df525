package httpapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/registry/policy"
	"github.com/runbookdev/runbook/runtime"
)

// Roles lists every role.
var Roles = []Role{RoleRead, RoleSubmit, RoleApprove, RoleNotify, RoleAdmin, RoleMetrics}

// Principal is who a token speaks for: a tenant, an actor, its roles.
type Principal struct {
	Tenant string
	Actor  string
	Roles  []Role
	// NamedActor says the token line named its actor: the ledger then
	// records it as who acted, and a request's "by" only as a note. A
	// token that names none (actor token-<n>) leaves "by" as the request
	// says, as before tokens had actors: there is no one else to record.
	NamedActor bool
	// Verbs is the token's verb scope (verbs=kyc.*,screening.run); nil
	// allows every verb (docs/design/semantics.md section 10).
	Verbs policy.VerbScope
	// MaxRisk is the riskiest step the token may submit and whose gate
	// it may decide (max_risk=); empty means high.
	MaxRisk rbtype.Risk
	// Groups are the groups the token belongs to (groups=compliance,dpo):
	// a step's :approvers names the one whose tokens may decide its gate.
	Groups []string
	// ID is the token's fingerprint (tokenFingerprint), "" for the open
	// daemon's anyone: what a schedule keeps of the token that made it.
	ID string
}

// maxRisk is the token's risk ceiling: high unless its line says less,
// and always high for an admin.
func (p *Principal) maxRisk() rbtype.Risk {
	if p.MaxRisk == "" || slices.Contains(p.Roles, RoleAdmin) {
		return rbtype.RiskHigh
	}
	return p.MaxRisk
}

// has reports whether the principal holds role (admin holds every one).
func (p *Principal) has(role Role) bool {
	return slices.Contains(p.Roles, role) || slices.Contains(p.Roles, RoleAdmin)
}

// scope is the engine's view of the principal.
func (p *Principal) scope() runtime.Scope {
	s := runtime.Scope{Tenant: p.Tenant, All: slices.Contains(p.Roles, RoleAdmin), Verbs: p.Verbs, MaxRisk: p.MaxRisk, Token: p.ID,
		Groups: p.Groups}
	if p.NamedActor {
		s.Actor = p.Actor
	}
	return s
}

type principalKey struct{}

// withPrincipal returns a context that carries who a request's token
// speaks for.
func withPrincipal(ctx context.Context, p *Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// principalOf says who a token-checked request's token speaks for.
func principalOf(r *http.Request) *Principal {
	if p, ok := r.Context().Value(principalKey{}).(*Principal); ok {
		return p
	}
	return &anyone
}

// tenantName is what a tenant may be called: it goes into keys and rows.
var tenantName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// ParseTokens reads --api-token-file's lines (comments and blank lines
// already dropped): a token, then optionally `tenant=T actor=A
// roles=r1,r2 verbs=kyc.*,screening.run max_risk=medium
// groups=compliance,dpo`. A bare token is
// the default tenant's, actor token-<n> (n its place among the tokens,
// from 1), with every role, every verb and every risk. A mistake (a
// malformed verbs= glob, an unknown risk) is an error naming the line, so
// that rbd refuses to start rather than grant less, or more, than meant.
func ParseTokens(lines []string) ([]Principal, [][sha256.Size]byte, error) {
	principals := make([]Principal, 0, len(lines))
	digests := make([][sha256.Size]byte, 0, len(lines))
	for i, line := range lines {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		p := Principal{Tenant: runtime.DefaultTenant, Actor: fmt.Sprintf("token-%d", i+1), Roles: []Role{RoleRead, RoleSubmit, RoleApprove, RoleNotify}}
		for _, attr := range fields[1:] {
			name, value, ok := strings.Cut(attr, "=")
			switch {
			case !ok || value == "":
				return nil, nil, fmt.Errorf("token %d: %q is not name=value (tenant=, actor=, roles=, verbs=, max_risk=, groups=)", i+1, attr)
			case name == "tenant":
				if !tenantName.MatchString(value) {
					return nil, nil, fmt.Errorf("token %d: tenant %q must be lower-case letters, digits, - and _, at most 64", i+1, value)
				}
				p.Tenant = value
			case name == "actor":
				p.Actor, p.NamedActor = value, true
			case name == "roles":
				p.Roles = nil
				for _, r := range strings.Split(value, ",") {
					if !slices.Contains(Roles, Role(r)) {
						return nil, nil, fmt.Errorf("token %d: unknown role %q (roles: read, submit, approve, notify, admin, metrics)", i+1, r)
					}
					p.Roles = append(p.Roles, Role(r))
				}
			case name == "verbs":
				scope, err := policy.ParseVerbScope(value)
				if err != nil {
					return nil, nil, fmt.Errorf("token %d: %v", i+1, err)
				}
				p.Verbs = scope
			case name == "groups":
				groups, err := parseGroups(value)
				if err != nil {
					return nil, nil, fmt.Errorf("token %d: %v", i+1, err)
				}
				p.Groups = groups
			case name == "max_risk":
				if !slices.Contains(rbtype.Risks, rbtype.Risk(value)) {
					return nil, nil, fmt.Errorf("token %d: unknown max_risk %q (low, medium, high)", i+1, value)
				}
				p.MaxRisk = rbtype.Risk(value)
			default:
				return nil, nil, fmt.Errorf("token %d: unknown attribute %q (tenant, actor, roles, verbs, max_risk, groups)", i+1, name)
			}
		}
		if len(fields) == 1 {
			p.Roles = append(p.Roles, RoleAdmin) // a bare token: every role, as before tenants
		}
		digest := sha256.Sum256([]byte(fields[0]))
		p.ID = tokenFingerprint(digest)
		principals = append(principals, p)
		digests = append(digests, digest)
	}
	return principals, digests, nil
}

// TokenWarnings says what a token file grants that its writer may not
// have meant (docs/daemon.md, "Tenants and roles"), one line each, naming
// tokens by their place in the file and never by their values. rbd serve
// logs them at start. Each is allowed, for what it is worth: a file
// written before tenants must keep working as it did.
func TokenWarnings(ps []Principal) []string {
	var out []string
	tenanted := false
	var defaults, anonymous []string
	for i, p := range ps {
		tenanted = tenanted || p.Tenant != runtime.DefaultTenant
		if p.Tenant == runtime.DefaultTenant {
			defaults = append(defaults, strconv.Itoa(i+1))
		}
		if !p.NamedActor {
			anonymous = append(anonymous, strconv.Itoa(i+1))
		}
	}
	for i, p := range ps {
		admin := slices.Contains(p.Roles, RoleAdmin)
		switch {
		case admin && p.Tenant != runtime.DefaultTenant:
			out = append(out, fmt.Sprintf("token %d (tenant=%s) has the admin role: it reads and changes every tenant's runbooks, not only %s's; "+
				"give it the roles it needs without admin to keep it to %s", i+1, p.Tenant, p.Tenant, p.Tenant))
		case admin && tenanted && len(defaults) > 1:
			out = append(out, fmt.Sprintf("token %d is an admin of the default tenant: what it submits lands in the default tenant, where "+
				"the default tenant's other tokens (%s) may cancel, retry or extend it; give it tenant= a tenant of its own",
				i+1, strings.Join(slices.DeleteFunc(slices.Clone(defaults), func(n string) bool { return n == strconv.Itoa(i+1) }), ", ")))
		}
	}
	if len(ps) > 1 && len(anonymous) > 0 {
		noun := "tokens " + strings.Join(anonymous, ", ") + " name"
		if len(anonymous) == 1 {
			noun = "token " + anonymous[0] + " names"
		}
		out = append(out, noun+" no actor: the ledger records whatever name their requests give as \"by\" (a decision by \"alice\" may be anyone's); give each actor=")
	}
	return out
}

// routeRoles is the role each token-checked route needs.
// TestEveryAPIRouteNeedsARole keeps it in step with the routes.
var routeRoles = map[string]Role{
	"POST /v1/runbooks":                          RoleSubmit,
	"GET /v1/runbooks":                           RoleRead,
	"GET /v1/costs":                              RoleRead,
	"GET /v1/runbooks/{id}":                      RoleRead,
	"GET /v1/runbooks/{id}/events":               RoleRead,
	"GET /v1/runbooks/{id}/plan":                 RoleRead,
	"GET /v1/runbooks/{id}/steps/{key}":          RoleRead,
	"POST /v1/runbooks/{id}/cancel":              RoleSubmit,
	"POST /v1/runbooks/{id}/retry":               RoleSubmit,
	"POST /v1/runbooks/{id}/regenerate":          RoleSubmit,
	"POST /v1/runbooks/{id}/close":               RoleSubmit,
	"POST /v1/runbooks/{id}/steps":               RoleSubmit,
	"POST /v1/runbooks/{id}/steps/{key}/resolve": RoleApprove,
	"POST /v1/runbooks/{id}/steps/{key}/approve": RoleApprove,
	"POST /v1/runbooks/{id}/steps/{key}/reject":  RoleApprove,
	"GET /v1/verbs":                              RoleRead,
	"GET /v1/outcomes/{id}":                      RoleRead,
	"POST /v1/schedules":                         RoleSubmit,
	"GET /v1/schedules":                          RoleRead,
	"GET /v1/schedules/{id}":                     RoleRead,
	"PATCH /v1/schedules/{id}":                   RoleSubmit,
	"DELETE /v1/schedules/{id}":                  RoleSubmit,
	"GET /v1/budgets":                            RoleRead,
	"PUT /v1/budgets/{tenant}/{scope}":           RoleAdmin,
	"DELETE /v1/budgets/{tenant}/{scope}":        RoleAdmin,
}

// ParseWebhookSecrets reads --webhook-secret-file's lines: a secret, then
// optionally `tenant=T`, whose notifications end only that tenant's waits.
func ParseWebhookSecrets(lines []string) (secrets [][]byte, tenants []string, err error) {
	for i, line := range lines {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		tenant := ""
		for _, attr := range fields[1:] {
			name, value, ok := strings.Cut(attr, "=")
			if !ok || name != "tenant" || !tenantName.MatchString(value) {
				return nil, nil, fmt.Errorf("secret %d: %q is not tenant=T (lower-case letters, digits, - and _)", i+1, attr)
			}
			tenant = value
		}
		secrets = append(secrets, []byte(fields[0]))
		tenants = append(tenants, tenant)
	}
	return secrets, tenants, nil
}

// Role is rbtype's: the API's whoami names it without httpapi.
type Role = rbtype.Role

// The roles (rbtype's).
const (
	RoleRead    = rbtype.RoleRead
	RoleSubmit  = rbtype.RoleSubmit
	RoleApprove = rbtype.RoleApprove
	RoleNotify  = rbtype.RoleNotify
	RoleAdmin   = rbtype.RoleAdmin
	RoleMetrics = rbtype.RoleMetrics
)

// tokenFingerprint names a token by its digest, without revealing it or
// its digest: the same token has the same fingerprint in every daemon and
// every restart, so a schedule's ticks find the token that made it in the
// token file of whichever daemon fires them.
func tokenFingerprint(digest [sha256.Size]byte) string {
	sum := sha256.Sum256(append([]byte("rbd token fingerprint\x00"), digest[:]...))
	return hex.EncodeToString(sum[:16])
}

// TokenScopes is runtime.Config.TokenScope for the tokens ParseTokens
// read: what the token with a fingerprint may do now, if the daemon still
// accepts it and it may submit. A token taken out of the file (and the
// daemon restarted) is no longer accepted: its schedules tick no more.
func TokenScopes(principals []Principal) func(string) (runtime.Scope, bool) {
	byID := make(map[string]*Principal, len(principals))
	for i := range principals {
		byID[principals[i].ID] = &principals[i]
	}
	return func(id string) (runtime.Scope, bool) {
		p, ok := byID[id]
		if !ok || !p.has(RoleSubmit) {
			return runtime.Scope{}, false
		}
		return p.scope(), true
	}
}
