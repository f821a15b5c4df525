// Package durable is everything PostgreSQL: the connection pool, the
// migration runner, the queries the runtime needs (runbooks, steps, leases,
// invocations, the inbox, receipts, events, mutations), advisory locks, and
// the LISTEN connection. It is the only package that imports pgx. Store
// and Tx implement the interfaces of driver and speak in its row
// types; pgx's errors are translated into driver's in one place
// (errors.go).
//
// Every connection of a Store uses one schema (search_path), so tests give
// each test its own schema and run in parallel against one server.
// pg.crud runs on a CRUDPool of its own, with the application's role and
// search path, never on the Store's.
package durable
