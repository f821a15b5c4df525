package runtime

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/runbookdev/runbook/runtime/driver"
	"github.com/runbookdev/runbook/runtime/rbtype"
)

// Notification is what an external process reports for a correlation key.
type Notification struct {
	CorrelationKey string
	// Status is completed or failed.
	Status rbtype.NotificationOutcome
	Result json.RawMessage
	// ErrorCode and ErrorMessage describe a failure; a retryable code lets
	// the step retry.
	ErrorCode    rbtype.ErrorCode
	ErrorMessage string
}

// notificationPayload is what a notification's payload hash covers. Its
// fields are in key order, so that it encodes as the map it replaced did
// and hashes stored by earlier releases still match their repeats.
type notificationPayload struct {
	ErrorCode    rbtype.ErrorCode           `json:"error_code"`
	ErrorMessage string                     `json:"error_message"`
	Result       any                        `json:"result"`
	Status       rbtype.NotificationOutcome `json:"status"`
}

// Notify stores a notification in the inbox and wakes the runbook waiting
// for it. A repeat with the same payload is a duplicate; the same key with
// another payload is a conflict and is refused.
func (e *Engine) Notify(ctx context.Context, n Notification) (rbtype.InboxResult, error) {
	if n.CorrelationKey == "" {
		return 0, fmt.Errorf("%w: correlation_key is required", ErrInvalid)
	}
	if len(n.CorrelationKey) > MaxKeyLength {
		return 0, fmt.Errorf("%w: correlation_key is %d bytes long; at most %d are allowed", ErrInvalid, len(n.CorrelationKey), MaxKeyLength)
	}
	if n.Status != rbtype.OutcomeCompleted && n.Status != rbtype.OutcomeFailed {
		return 0, fmt.Errorf("%w: status must be %q or %q", ErrInvalid, rbtype.OutcomeCompleted, rbtype.OutcomeFailed)
	}
	if n.Status == rbtype.OutcomeFailed && n.ErrorCode == "" {
		// A failure that does not say why would fail the step as
		// INTERNAL with no message, which nobody can act on, and it
		// would take the key for good.
		return 0, fmt.Errorf("%w: a failed notification needs error.code (and, best, error.message) saying why", ErrInvalid)
	}
	result, err := canonicalJSON(n.Result)
	if err != nil {
		return 0, fmt.Errorf("%w: result: %v", ErrInvalid, err)
	}
	payload, err := json.Marshal(notificationPayload{
		Status: n.Status, Result: result, ErrorCode: n.ErrorCode, ErrorMessage: n.ErrorMessage,
	})
	if err != nil {
		return 0, fmt.Errorf("%w: result: %v", ErrInvalid, err)
	}
	return e.store.InsertNotification(ctx, driver.Notification{
		CorrelationKey: n.CorrelationKey, PayloadHash: hashJSON(payload), Outcome: n.Status,
		Result: n.Result, ErrorCode: n.ErrorCode, ErrorMessage: n.ErrorMessage,
	})
}

// canonicalJSON decodes JSON, so that two payloads that differ only in
// spacing or key order encode, and hash, alike.
func canonicalJSON(b json.RawMessage) (any, error) {
	if len(b) == 0 {
		return nil, nil
	}
	return decodeJSON(b)
}
