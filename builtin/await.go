package builtin

import (
	"context"

	"github.com/runbookdev/runbook/handler"
	"github.com/runbookdev/runbook/rbtype"
)

// awaitBuiltin is await.notification: what the compiler checks a verb against, and the code that runs it.
var awaitBuiltin = builtinHandler{
	spec: handler.Spec{Name: "await.notification", Kind: rbtype.KindDurable, Summary: "parks until a notification arrives",
		CheckParams: checkNoParams},
	impl: func(Deps) handler.Handler { return handler.HandlerFunc(awaitNotification) },
}

// awaitNotification parks at once: the outside world notifies with the
// step's correlation key, which `rbd status` shows.
func awaitNotification(context.Context, *handler.Call) (handler.Result, error) {
	return handler.Parked(""), nil
}

func checkNoParams(m map[string]any) error { return newParams(m).err() }
