// Package registry is the verb catalogue: the verb definitions by name, the
// handlers the build knows by name and kind, and suggestions for near
// misses. It performs the definition checks that need more than one file:
// an unregistered handler (V011), a handler of the wrong kind or with bad
// params (V004), and compensations that name unknown verbs or do not fit
// them (V014).
package registry
