package httpapi

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// SignatureHeader carries a webhook's signature:
// "t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">", as the
// Go client's Sign makes it.
const SignatureHeader = "Rbd-Signature"

// SignatureWindow is how far a signature's timestamp may lie from the
// daemon's clock, either way: older is a replay, newer a forgery or a
// broken clock.
const SignatureWindow = 5 * time.Minute

func mac(secret []byte, ts string, body []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// Errors of VerifySignature; each answers 401.
var (
	ErrNoSignature      = errors.New("the request has no " + SignatureHeader + " header (rbd notify signs with the secret in RBD_WEBHOOK_SECRET_FILE or --webhook-secret-file)")
	ErrBadSignature     = errors.New("the " + SignatureHeader + " header does not match the body")
	ErrStaleSignature   = errors.New("the " + SignatureHeader + " timestamp is outside the 5-minute window (a replay, or a clock that is off)")
	ErrMalformedSigHead = errors.New("the " + SignatureHeader + ` header must be "t=<unix seconds>,v1=<hex HMAC-SHA256>"`)
)

// VerifySignature checks a webhook's signature header against its raw
// body with each of the secrets (more than one while a secret is being
// rotated). Several v1 values are allowed, for the same reason on the
// sender's side. The comparison is constant-time.
func VerifySignature(header string, body []byte, secrets [][]byte, now time.Time) error {
	_, err := verifySignature(header, body, secrets, now)
	return err
}

// verifySignature is VerifySignature, saying which secret matched (its
// tenant decides which waits the notification may end).
func verifySignature(header string, body []byte, secrets [][]byte, now time.Time) (int, error) {
	ts, sigs, err := parseSignatureHeader(header, now)
	if err != nil {
		return -1, err
	}
	for i, secret := range secrets {
		want := mac(secret, ts, body)
		for _, sig := range sigs {
			if hmac.Equal(sig, want) {
				return i, nil
			}
		}
	}
	return -1, ErrBadSignature
}

// checkSignatureHeader checks what can be checked of a signature header
// before the body arrives: that it is there, has its shape, and is fresh.
// A header that fails cannot match any body, so the body need not be
// read, nor room taken for it.
func checkSignatureHeader(header string, now time.Time) error {
	_, _, err := parseSignatureHeader(header, now)
	return err
}

// parseSignatureHeader reads a signature header: its timestamp, as sent,
// and its v1 signatures. It refuses one that is missing, malformed, or
// outside the window around now.
func parseSignatureHeader(header string, now time.Time) (ts string, sigs [][]byte, err error) {
	if header == "" {
		return "", nil, ErrNoSignature
	}
	for _, part := range strings.Split(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return "", nil, ErrMalformedSigHead
		}
		switch k {
		case "t":
			ts = v
		case "v1":
			sig, err := hex.DecodeString(v)
			if err != nil || len(sig) != sha256.Size {
				return "", nil, fmt.Errorf("%w: v1 is not the hex of a SHA-256 HMAC", ErrMalformedSigHead)
			}
			sigs = append(sigs, sig)
		}
		// Other schemes (v2, ...) are a sender's future; ignore them.
	}
	unix, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || len(sigs) == 0 {
		return "", nil, ErrMalformedSigHead
	}
	if d := now.Sub(time.Unix(unix, 0)); d > SignatureWindow || d < -SignatureWindow {
		return "", nil, ErrStaleSignature
	}
	return ts, sigs, nil
}
