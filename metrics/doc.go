// Package metrics exports what a core.Gate and a core.Limiter count to
// Prometheus, and writes a security log of the events that name a player.
//
// GateCollector and LimiterCollector are prometheus.Collectors that read the
// gate's and limiter's own counters at scrape time: nothing is added to
// Gate.Check or a take, and no series carries a label whose values grow
// with traffic (a session, account or address). Those identities go only to
// the SecurityLog, an observer on log/slog that coalesces and samples what
// it writes and never makes a decision wait for its handler.
//
// See docs/metrics.md for every series, its labels and sample queries.
package metrics
