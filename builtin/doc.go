// Package builtin holds the built-in handlers of docs/design/verbs.md
// (core.echo, core.fail, http.call, http.start, await.notification,
// timer.sleep, pg.crud), one file each: the handler's declaration (its
// name, kind and params check, what rbc and the registry check verbs
// against) beside the code that runs it. It imports no engine, so rbc
// links it for the declarations alone.
package builtin
