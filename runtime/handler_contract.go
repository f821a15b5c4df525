package runtime

import "github.com/runbookdev/runbook/handler"

// The handler contract lives in package handler, a leaf that the registry
// and rbc import without the engine; these names keep it at hand here.
type (
	Handler     = handler.Handler
	DryRunner   = handler.DryRunner
	Canceller   = handler.Canceller
	HandlerFunc = handler.HandlerFunc
	Call        = handler.Call
	Result      = handler.Result
	Error       = handler.Error
)

// Complete, Parked, ParkedUntil and Errorf are package handler's.
var (
	Complete    = handler.Complete
	Parked      = handler.Parked
	ParkedUntil = handler.ParkedUntil
	Errorf      = handler.Errorf
)
