// Package driver is the seam between the runtime and its database: the
// interfaces the runtime needs of a store, a transaction and a listener,
// and the row types they speak in. package durable implements them for
// PostgreSQL; the runtime imports only this package, so that its logic
// reads without SQL and its state machine can be tested without a
// database (River's riverdriver is the model).
package driver
