package httpapi_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/client"
	"github.com/runbookdev/runbook/httpapi"
)

func TestSignatureFormatIsStable(t *testing.T) {
	// Pinned so that senders in other languages can check their own code:
	// printf '1700000000.{"a":1}' | openssl dgst -sha256 -hmac secret
	got := client.Sign([]byte("secret"), []byte(`{"a":1}`), time.Unix(1700000000, 0))
	require.Equal(t, "t=1700000000,v1=49f24e537407743fa4a0242bb63b94b9a47ee99cbbe071ccd8a22550ae411686", got)
}

func TestVerifySignature(t *testing.T) {
	body := []byte(`{"correlation_key":"k","status":"completed"}`)
	now := time.Unix(1800000000, 0)
	a, b := []byte("secret-a"), []byte("secret-b")
	good := client.Sign(a, body, now)
	cases := []struct {
		name    string
		header  string
		secrets [][]byte
		want    error
	}{
		{"good", good, [][]byte{a}, nil},
		{"rotating: any secret", good, [][]byte{b, a}, nil},
		{"rotating: any v1", good + ",v1=" + client.Sign(b, body, now)[len("t=1800000000,v1="):], [][]byte{b}, nil},
		{"unknown schemes ignored", good + ",v2=zz", [][]byte{a}, nil},
		{"edge of the window", client.Sign(a, body, now.Add(-5*time.Minute)), [][]byte{a}, nil},
		{"missing", "", [][]byte{a}, httpapi.ErrNoSignature},
		{"other secret", good, [][]byte{b}, httpapi.ErrBadSignature},
		{"old", client.Sign(a, body, now.Add(-5*time.Minute-time.Second)), [][]byte{a}, httpapi.ErrStaleSignature},
		{"future", client.Sign(a, body, now.Add(5*time.Minute+time.Second)), [][]byte{a}, httpapi.ErrStaleSignature},
		{"no timestamp", "v1=00", [][]byte{a}, httpapi.ErrMalformedSigHead},
		{"no v1", "t=1800000000", [][]byte{a}, httpapi.ErrMalformedSigHead},
		{"not hex", "t=1800000000,v1=xyz", [][]byte{a}, httpapi.ErrMalformedSigHead},
		{"garbage", "hello", [][]byte{a}, httpapi.ErrMalformedSigHead},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := httpapi.VerifySignature(c.header, body, c.secrets, now)
			if c.want == nil {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, c.want)
			}
		})
	}
}
