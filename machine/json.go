package machine

import (
	"bytes"
	"encoding/json"
	"errors"

	"github.com/runbookdev/runbook/rbtype"
)

// CanonicalJSON decodes JSON, so that two payloads that differ only in
// spacing or key order encode, and hash, alike.
func CanonicalJSON(b json.RawMessage) (any, error) {
	if len(b) == 0 {
		return nil, nil
	}
	return rbtype.DecodeJSON(b)
}

// MarshalResult encodes a handler's result as the step's result: {} for
// none, and an error for a value the database could not store.
func MarshalResult(v any) (json.RawMessage, error) {
	if v == nil {
		return json.RawMessage(`{}`), nil
	}
	b, err := json.Marshal(v)
	if err == nil && holdsNUL(b) {
		// jsonb cannot store it: the advance that wrote this result would
		// fail, and fail again at every retry, with the runbook stuck.
		return nil, errors.New("it holds a NUL character (\\u0000), which cannot be stored")
	}
	return b, err
}

// holdsNUL reports a \u0000 escape in JSON that encoding/json wrote (a
// raw NUL byte is always escaped there). An escaped backslash is skipped
// whole, so the text \\u0000 (a backslash, then "u0000") is not one.
func holdsNUL(b []byte) bool {
	for i := 0; i < len(b); i++ {
		if b[i] == '\\' {
			if bytes.HasPrefix(b[i+1:], []byte("u0000")) {
				return true
			}
			i++
		}
	}
	return false
}
