package lsp

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.lsp.dev/jsonrpc2"
)

// A request that panics is answered with an internal error, and the
// session goes on.
func TestAPanicIsAnsweredNotFatal(t *testing.T) {
	var log strings.Builder
	s := &Server{opts: Options{Log: &log}, methods: map[string]jsonrpc2.Handler{
		"boom": answer(func(context.Context, *struct{}) (any, error) { panic("index out of range") }),
	}}
	call, err := jsonrpc2.NewCall(jsonrpc2.NewNumberID(1), "boom", nil)
	require.NoError(t, err)
	var replied error
	err = s.handle(context.Background(), func(_ context.Context, _ any, err error) error {
		replied = err
		return nil
	}, call)
	require.NoError(t, err, "the connection is kept")
	require.True(t, errors.Is(replied, jsonrpc2.ErrInternal))
	require.ErrorContains(t, replied, "boom: index out of range")
	require.Contains(t, log.String(), "rbc lsp: boom: panic: index out of range\ngoroutine")
}
