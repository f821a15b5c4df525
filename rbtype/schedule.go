package rbtype

// Overlap says what a schedule's tick does while its previous runbook is
// unfinished (docs/design/semantics.md section 14).
type Overlap string

// The overlaps.
const (
	OverlapSkip  Overlap = "skip"
	OverlapAllow Overlap = "allow"
)

// CatchUp says what a schedule does about ticks no daemon fired.
type CatchUp string

// The catch-ups.
const (
	CatchUpNone   CatchUp = "none"
	CatchUpLatest CatchUp = "latest"
)
