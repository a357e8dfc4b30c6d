package server

import (
	"math"
	"sync"

	"github.com/sluicedev/sluice/core"
)

// Tokens maps Hello tokens to accounts, one account per distinct token and
// never one for two: the reference server's stand-in for an
// authentication service. The mapping is:
//
//   - a token of decimal digits in canonical form (no leading zero) whose
//     value is in [1, TokenOpaque) is that account: the harness's tokens;
//   - any other token of 1 to 7 bytes is TokenOpaque | length<<56 | the
//     bytes, big-endian: its bytes, packed;
//   - any other token of 8 to 255 bytes is TokenOpaque | n for the n-th
//     such token the table has seen (n from 1): a name given once and kept
//     for the table's life, so that the account's state (its buckets,
//     strikes and lockout in the gate) is the same account's on every
//     connection. At most the table's bound of them are named; a new one
//     past it is refused (core.TableFull).
//
// The three ranges are disjoint, and within each the mapping is one to one:
// two distinct tokens never share an account (no hash, which a client could
// aim at another's id). An empty token names no account (core.Malformed).
//
// Make one with NewTokens; the zero value is not usable. A Tokens is safe
// for concurrent use (only long tokens take its lock).
type Tokens struct {
	mu    sync.Mutex
	names map[string]uint64
	max   int
}

// TokenOpaque is the start of the accounts of tokens that are not a
// canonical decimal account: the two top bits set.
const TokenOpaque = 3 << 62

// DefaultMaxTokens is the default bound of a Tokens' named long tokens.
const DefaultMaxTokens = 100_000

// NewTokens returns a table that names at most max long tokens (max ≤ 0:
// DefaultMaxTokens).
func NewTokens(max int) *Tokens {
	if max <= 0 {
		max = DefaultMaxTokens
	}
	return &Tokens{names: map[string]uint64{}, max: max}
}

// Account returns the account token names, or 0 and why not: Malformed
// for an empty token, TableFull for a new long token past the bound.
func (t *Tokens) Account(token []byte) (uint64, core.Reason) {
	if len(token) == 0 {
		return 0, core.Malformed
	}
	if v, ok := canonicalDecimal(token); ok && v < TokenOpaque {
		return v, core.None
	}
	if len(token) <= 7 {
		a := uint64(TokenOpaque) | uint64(len(token))<<56
		for i, b := range token {
			a |= uint64(b) << (8 * (len(token) - 1 - i))
		}
		return a, core.None
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if a, ok := t.names[string(token)]; ok {
		return a, core.None
	}
	if len(t.names) >= t.max {
		return 0, core.TableFull
	}
	a := uint64(TokenOpaque) | uint64(len(t.names)+1)
	t.names[string(token)] = a
	return a, core.None
}

// canonicalDecimal parses a token of decimal digits with no leading zero
// whose value is at least 1 and fits in 64 bits.
func canonicalDecimal(token []byte) (uint64, bool) {
	if len(token) == 0 || len(token) > 20 || token[0] == '0' {
		return 0, false
	}
	var v uint64
	for _, b := range token {
		d := uint64(b - '0')
		if b < '0' || b > '9' || v > (math.MaxUint64-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	return v, true
}
