// Package policy is the operator's policy (docs/design/semantics.md
// sections 10 and 11): which steps wait for a person, which are refused,
// which may run with nobody watching, how risky a step a tenant may run,
// and what a tenant and each of its runbooks may spend. It reads the
// policy file of rbd serve --policy, strictly, with each problem named by
// file, line and key; it decides about one step (Tenant.Decide) for the
// daemon at admission, for GET /v1/verbs, and for rbc effects --policy
// offline; and it parses a token's verb scope (verbs= globs).
//
// It sits beside the catalogue whose verbs it judges, and imports neither
// the compiler nor the runtime, so that rbc and rbd decide with the same
// code. A step is judged by its policy tags, its risk and its verb: the
// caller reads those from the frozen plan (whose execution blocks, tags
// included, are held to the catalogue's).
package policy
