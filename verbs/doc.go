// Package verbs loads verb definitions: the YAML files that say what a
// runbook step does when it calls a verb (its handler, kind, retries,
// timeouts, idempotency, gate and compensation) and the JSON Schemas of its
// arguments and result.
//
// The loader walks yaml.v3 nodes rather than decoding into structs, so that
// every problem is reported as a V-series diagnostic with the file, line and
// column of the offending node, unknown fields included. Checks that need the
// whole catalogue or the handler table (V011, V014, a handler of the wrong
// kind) live in package registry.
package verbs
