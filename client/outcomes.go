package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"time"

	"github.com/google/uuid"

	"github.com/runbookdev/runbook/rbtype"
)

// Produced is one typed outcome of a runbook, as its view lists it
// (docs/design/semantics.md section 13).
type Produced struct {
	OutcomeID uuid.UUID            `json:"outcome_id"`
	Type      string               `json:"type"`
	Status    rbtype.OutcomeStatus `json:"status"`
	Preview   string               `json:"preview"`
	Step      string               `json:"step"`
	Version   int                  `json:"version"`
}

// Outcome is what a step produced, with what it was made from.
type Outcome struct {
	ID          uuid.UUID            `json:"outcome_id"`
	RunbookID   uuid.UUID            `json:"runbook_id"`
	LineageRoot uuid.UUID            `json:"lineage_root"`
	Generation  int                  `json:"generation"`
	Step        string               `json:"step"`
	Attempt     int                  `json:"attempt"`
	Verb        string               `json:"verb"`
	Type        string               `json:"type"`
	Status      rbtype.OutcomeStatus `json:"status"`
	Preview     string               `json:"preview"`
	// ArgsHash and ResultHash are the SHA-256 (hex) of the canonical JSON
	// of the producing attempt's arguments and of its result.
	ArgsHash   string          `json:"args_hash,omitempty"`
	ResultHash string          `json:"result_hash"`
	Model      string          `json:"model,omitempty"`
	Parameters json.RawMessage `json:"parameters,omitempty"`
	// Consumed are the outcomes whose results it was made from.
	Consumed []uuid.UUID `json:"consumed"`
	// Version counts the regenerations that made it again; Previous is
	// the version before.
	Version   int        `json:"version"`
	Previous  *uuid.UUID `json:"previous,omitempty"`
	CreatedAt time.Time  `json:"created_at"`
}

// OutcomeView is GET /v1/outcomes/{id}: the outcome, the arguments of the
// attempt that made it, what it was made from (and what that was made
// from), and its earlier versions, newest first.
type OutcomeView struct {
	Outcome
	Arguments  json.RawMessage `json:"arguments,omitempty"`
	Provenance []Outcome       `json:"provenance"`
	Versions   []Outcome       `json:"versions"`
}

// Outcome reads an outcome with its provenance.
func (c *Client) Outcome(ctx context.Context, id string) (*OutcomeView, error) {
	var out OutcomeView
	if _, err := c.call(ctx, http.MethodGet, "/v1/outcomes/"+url.PathEscape(id), nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
