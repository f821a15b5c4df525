package rbtype

// DefaultTenant owns the runbooks of a token that names no tenant, and
// every runbook stored before tenants existed (docs/design/semantics.md section 1).
const DefaultTenant = "default"
