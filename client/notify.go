package client

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/runbookdev/runbook/apitype"
)

// SignatureHeader carries a notification's signature.
const SignatureHeader = "Rbd-Signature"

// Notify delivers a notification, signed when the client has a
// WebhookSecret. The same key with another payload is an *Error with
// CodeConflict: the first notification stands.
func (c *Client) Notify(ctx context.Context, n apitype.NotificationRequest) (*apitype.NotificationResponse, error) {
	body, err := json.Marshal(n)
	if err != nil {
		return nil, err
	}
	header := http.Header{}
	if len(c.WebhookSecret) > 0 {
		header.Set(SignatureHeader, Sign(c.WebhookSecret, body, c.now()))
	}
	var out apitype.NotificationResponse
	if _, err := c.call(ctx, http.MethodPost, "/v1/notifications", header, body, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Sign returns the Rbd-Signature of a notification's body, signed with
// secret at t: "t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">".
// A sender that is not a Go program computes the same.
func Sign(secret, body []byte, t time.Time) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return "t=" + ts + ",v1=" + hex.EncodeToString(m.Sum(nil))
}
