// Package billing prices LLM and media requests, enforces spend and rate
// limits, and keeps the ledger of what every request cost.
//
// Money is exact: prices are read from the price file as decimals (never
// float64), costs are computed with shopspring/decimal (or int64 when every
// rate is a whole number of nanos, which is just as exact) and rounded once,
// half to even, to an Amount in nano units (1e-9) of the model's currency.
//
// The flow for a request is Engine.Admit before the upstream is called
// (429 insufficient_quota or rate_limit_exceeded when over a limit), then
// exactly one of Reservation.Settle (asynchronous ledger write),
// Reservation.Charge (synchronous, for tasks) or Reservation.Release (the
// upstream was never reached). The Ledger appends each record once to its
// journal and, in one store transaction per batch, adds it to its daily
// aggregate and its spend counters; Ledger.Report sums the aggregates.
package billing
