// Package registry is the verb catalogue: the verb definitions by name, the
// handlers the build knows by name and kind, and suggestions for near
// misses. It performs the definition checks that need more than one file:
// an unregistered handler (V011), a handler of the wrong kind or with bad
// params (V004), compensations that name unknown verbs or do not fit
// them (V014), and pg.crud verbs that name rbd's own tables (V015).
//
// It also holds the one rule for pg.crud's names (CheckCRUDTable,
// CheckIdentifier), which the runtime applies again before every call.
// It imports no database driver: rbc uses it.
package registry
