// Package client is the Go client of rbd's HTTP API
// (docs/reference/http-api.md): typed requests and responses for every
// route, errors that say which refusal they are, and a retry policy for
// the answers that mean "try again".
//
// A Client is a plain struct; FromEnv fills one from RBD_SERVER and
// RBD_TOKEN, as rbd's own commands do:
//
//	c := client.FromEnv()
//	sub, err := c.Submit(ctx, apitype.SubmitRequest{Source: src, Filename: "x.rbk"})
//	view, err := c.Wait(ctx, sub.ID.String())
//
// Every call takes a context and stops when it ends, waits between
// retries included.
//
// # Errors
//
// An answer the daemon refused is an *Error: its HTTP status, its code
// (NOT_FOUND, CONFLICT, COMPILE_FAILED, ...), its message and, for a
// source that does not compile, its diagnostics. An ErrorCode is itself an
// error, so errors.Is(err, client.CodeNotFound) asks which refusal it was.
// Anything else (no daemon answering, a context that ended) is returned
// as the standard library gave it.
//
// # Retries
//
// The daemon answers 503 UNAVAILABLE, with a Retry-After header, when its
// database is down or busy or it is reading as many request bodies as it
// may; nothing was done, and the same request may succeed a moment later.
// The client then waits as Retry-After says (or backs off, when it says
// nothing) and sends the request again, up to RetryPolicy.MaxAttempts
// times. Every request is safe to send again: a submission or a
// regeneration with the same Idempotency-Key (or, without one, the same
// content) answers the runbook the first one made, a notification with
// the same payload is a duplicate, and a decision or a cancel that did
// happen answers as before or with 409. No other status is retried, and
// neither is a request the daemon never answered: whether it arrived is
// unknown, and the caller decides.
//
// # Idempotency keys
//
// SubmitRequest.IdempotencyKey and RegenerateRequest.IdempotencyKey are
// sent as the Idempotency-Key header: a repeat of the request answers the
// runbook the first one made (Created false) whatever became of it.
// NewIdempotencyKey makes a random one for a caller that has no key of
// its own and wants to submit the same content twice on purpose.
package client
