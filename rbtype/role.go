package rbtype

// Role is what a token may do (docs/design/semantics.md section 1).
type Role string

// The roles. Admin sees and acts on every tenant and has every role.
const (
	RoleRead    Role = "read"    // GET
	RoleSubmit  Role = "submit"  // submit, extend, retry, regenerate, cancel, close
	RoleApprove Role = "approve" // gate decisions, resolving escalations
	RoleNotify  Role = "notify"  // delivering notifications through /mcp's notify tool; the webhook itself is signed, not token-checked
	RoleAdmin   Role = "admin"
	// RoleMetrics reads /metrics, and nothing else, once tenants are
	// configured: a scraper needs no more (docs/daemon.md).
	RoleMetrics Role = "metrics"
)
