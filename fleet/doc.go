// Package fleet makes the gate's keyed budgets (account, address, match)
// shared by every server of a fleet, on Redis, while the take on the
// message path stays a local, lock-free, allocation-free operation with no
// I/O.
//
// # Lease mode (the gate's layers)
//
// A fleet bucket (rate r, burst b) lives in the Store, one Redis key per
// limit key. Each server leases tokens from it in chunks of L (Config.Lease)
// and spends them locally: Layer.TakeAt is one CompareAndSwap on the key's
// lease word. The refresher goroutine (Fleet.Start, Fleet.Stop) tops a
// lease up when it falls under L, returns the unspent tokens of a lease
// unused for Config.Idle, and counts the live servers by heartbeats. A key
// with no lease (new, or returned idle) takes its first lease on credit,
// so a player's first message never waits; the refresher charges that
// credit to the fleet bucket as a debt, whatever the bucket holds. A
// simulation runs the rounds itself instead, in its own time (Fleet.Step,
// on a MemStore reading the same clock), so that its runs are exact.
//
// The bound. With S servers, over any interval of length T shorter than
// Config.Idle, the fleet admits for one key at most
//
//	b + r·T + 2·S·L
//
// tokens: what the bucket can grant in T (b + r·T), what the servers held
// when the interval began (at most S·L), and what they spent on credit in
// it (at most S·L, one credit per server per idle period). For longer
// intervals add S·L for every further idle period. TestFourServersRedis
// holds it with four servers and a hostile account spread over them.
//
// # Failures
//
// No take waits for the store. A refresher round (or heartbeat) that fails
// or takes longer than Config.Timeout marks the store unavailable; until a
// round succeeds, a take its lease cannot cover follows Config.OnFailure:
// FailLocal (the default) takes from a local bucket with rate r and burst
// b, each ÷ n, the live servers by the last heartbeat (Config.Servers
// before the first): the local share, so that while the live counts are
// right the fleet admits at most b + r·T + S·L over T, the leases held
// included. FailDeny denies, FailAllow lets it through.
// Errors are counted (Stats), never panics. When the store answers again
// the refresher resumes leasing and the fleet is back under its bucket
// within a refresh period or two. A Redis restarted without its data has
// lost its keys: every fleet bucket is full again (GCRA state that expires
// when full means a missing key is a full bucket).
//
// # Strict mode (request handlers)
//
// Strict decides each take by one atomic GCRA script on Redis, so the fleet
// never admits more than r·T + b, at the price of a round trip that blocks
// the caller: for requests whose client waits for an answer anyway (a
// purchase), never on the gate's input path. Concurrent callers' takes
// are batched into one round trip.
//
// This package imports core and is never imported by it; core only
// offers the extension point (core.KeyedLayer, core.WithKeyedLayer) and
// validates the policy's fleet section (core.Fleet).
package fleet
