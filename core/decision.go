package core

import (
	"fmt"
	"time"
)

// Decision is the answer of a Limiter to one take: whether it passed, why
// not, when to retry and what is left. It is a small value returned without
// allocation. The zero value is a denial with Reason None, which no Limiter
// returns; a caller that forgets to fill one in therefore fails closed.
//
// Allowed with Reason None is an ordinary pass. Allowed with Reason
// TableFull is a pass of a key the limiter could not track (fail-open
// configuration): nothing was counted for it. A denial always has a reason:
// the limiter's DenyReason (an empty bucket, a soft violation), Lockout,
// TableFull, Closed, or Oversize for a take that can never pass (n is 0 or
// above the burst).
type Decision struct {
	// RetryAfter is, for a denial, the time from now after which the same
	// take may pass (for Lockout: the rest of the lockout, after which
	// the bucket may still be refilling (for the take that starts the
	// lockout: the later of the two);
	// for TableFull: when the first key of the full shard becomes
	// evictable if untouched (its bucket full, its escalation over), as
	// the shard's scan found it, and not before the shard's eviction
	// backoff ends, else one fill time; for
	// Oversize: 0, it never will). 0 for a pass.
	RetryAfter time.Duration
	// Remaining is the number of whole tokens left in the key's bucket
	// after the decision; 0 for a take refused while its key is held
	// (Lockout), which does not read the bucket, and for Closed and
	// TableFull.
	Remaining uint32
	// Allowed reports whether the take passed.
	Allowed bool
	// Reason says why the take was denied (see above).
	Reason Reason
}

// String returns a short description, e.g. "allowed (3 left)" or
// "denied: Lockout, retry after 29.5s".
func (d Decision) String() string {
	switch {
	case d.Allowed && d.Reason == None:
		return fmt.Sprintf("allowed (%d left)", d.Remaining)
	case d.Allowed:
		return fmt.Sprintf("allowed untracked: %v", d.Reason)
	}
	return fmt.Sprintf("denied: %v, retry after %v", d.Reason, d.RetryAfter)
}
