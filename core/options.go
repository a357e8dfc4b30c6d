package core

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/sluicedev/sluice/atomicbucket"
	"github.com/sluicedev/sluice/shardmap"
)

// Defaults of LimiterConfig, used where a field is left at its zero value.
const (
	DefaultMaxKeys             = 100_000
	DefaultSoftViolationWindow = 8 * time.Second
	DefaultMaxSoftViolations   = 5
	DefaultLockoutDuration     = 30 * time.Second
)

// LimiterConfig configures a Limiter. Options in this package are plain
// config structs with a Validate method: a field left at its zero value
// takes the documented default (the rule: zero means default, so the zero
// LimiterConfig plus a Rate is a working limiter); a value that is set but
// unusable is an error naming the field, never a silent correction.
type LimiterConfig struct {
	// Rate is the refill rate of every key's bucket, in tokens per second.
	// Required (> 0, finite, at most atomicbucket.MaxRate).
	Rate float64
	// Burst is every bucket's capacity in tokens. 0 means
	// atomicbucket.DefaultBurst(Rate) = max(1, ceil(Rate)).
	Burst float64
	// MaxKeys bounds the keys tracked at once, over the whole table. 0
	// means DefaultMaxKeys.
	MaxKeys int
	// Shards is the shard count, a power of two. 0 means
	// shardmap.DefaultShards(MaxKeys).
	Shards int
	// DenyReason is the reason of an ordinary denial (an empty bucket).
	// None means AccountLimit.
	DenyReason Reason

	// SoftViolationWindow: denials of a key inside a window that starts at
	// its first denial count as soft violations. 0 means
	// DefaultSoftViolationWindow.
	SoftViolationWindow time.Duration
	// MaxSoftViolations is the count of soft violations inside one window
	// that locks the key out. 0 means DefaultMaxSoftViolations; at most
	// shardmap.MaxCount (255).
	MaxSoftViolations int
	// LockoutDuration is how long a locked-out key is refused. 0 means
	// DefaultLockoutDuration.
	LockoutDuration time.Duration
	// DisableEscalation turns soft violations and lockouts off: a denial is
	// only a denial.
	DisableEscalation bool

	// FailOpen makes a take on a key that cannot be tracked (the table is
	// full of keys that may not be evicted) pass, with Reason TableFull,
	// instead of being denied with TableFull (the default: fail closed).
	FailOpen bool
	// EvictBackoff: see shardmap.Config. 0 means
	// shardmap.DefaultEvictBackoff; negative means never back off.
	EvictBackoff time.Duration
	// HashSeed, if not 0, fixes the key table's hash secrets
	// (shardmap.Config.Seed): for reproducible simulations only. It fixes
	// where uint64 keys land; StringKey and AddrKey still hash with a
	// secret of their own, and Shards 0 still depends on GOMAXPROCS.
	HashSeed uint64

	// Clock is the clock of the convenience methods without an At suffix
	// and of the janitor, in nanoseconds; the limiter is anchored at its
	// reading in NewLimiter. Every At method must be passed times on the
	// same clock; times before that reading (a now below 0 on a clock that
	// read 0) are served as exactly as later ones, windows and lockouts
	// included, back to about 219 years before 0 (the epoch of shardmap's marks). nil means
	// atomicbucket.Nanotime.
	Clock func() int64
}

// ErrLimiterConfig is wrapped by every LimiterConfig error; test with
// errors.Is. Errors of the rate and burst also wrap atomicbucket's
// ErrRate or ErrBurst.
var ErrLimiterConfig = errors.New("core: invalid limiter config")

// LimiterConfigError names the unusable field of a LimiterConfig.
type LimiterConfigError struct {
	Field  string // the field's name, e.g. "LockoutDuration"
	Value  any    // the value given
	Reason string // why it was refused
	Err    error  // an underlying error (atomicbucket or shardmap), or nil
}

func (e *LimiterConfigError) Error() string {
	return fmt.Sprintf("core: limiter %s %v: %s", e.Field, e.Value, e.Reason)
}

// Unwrap returns ErrLimiterConfig and the underlying error, if any.
func (e *LimiterConfigError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrLimiterConfig, e.Err}
	}
	return []error{ErrLimiterConfig}
}

// Validate reports the first unusable field of c, after defaults.
func (c LimiterConfig) Validate() error {
	_, err := c.resolve()
	return err
}

// WithDefaults returns c with every zero field replaced by its default.
func (c LimiterConfig) WithDefaults() LimiterConfig {
	if c.Burst == 0 && c.Rate > 0 && !math.IsInf(c.Rate, 0) {
		c.Burst = atomicbucket.DefaultBurst(c.Rate)
	}
	if c.MaxKeys == 0 {
		c.MaxKeys = DefaultMaxKeys
	}
	if c.Shards == 0 && c.MaxKeys > 0 {
		c.Shards = shardmap.DefaultShards(c.MaxKeys)
	}
	if c.DenyReason == None {
		c.DenyReason = AccountLimit
	}
	if c.SoftViolationWindow == 0 {
		c.SoftViolationWindow = DefaultSoftViolationWindow
	}
	if c.MaxSoftViolations == 0 {
		c.MaxSoftViolations = DefaultMaxSoftViolations
	}
	if c.LockoutDuration == 0 {
		c.LockoutDuration = DefaultLockoutDuration
	}
	if c.EvictBackoff == 0 {
		c.EvictBackoff = shardmap.DefaultEvictBackoff
	}
	if c.Clock == nil {
		c.Clock = atomicbucket.Nanotime
	}
	return c
}

func cfgErr(field string, v any, reason string, err error) error {
	return &LimiterConfigError{Field: field, Value: v, Reason: reason, Err: err}
}

// resolve fills defaults and validates.
func (c LimiterConfig) resolve() (LimiterConfig, error) {
	c = c.WithDefaults()
	if _, err := atomicbucket.NewLimit(c.Rate, c.Burst, 0); err != nil {
		var be *atomicbucket.ConfigError
		if errors.As(err, &be) {
			name := "Rate"
			if be.Field == "burst" {
				name = "Burst"
			}
			return c, cfgErr(name, be.Value, be.Reason, err)
		}
		return c, cfgErr("Rate", c.Rate, err.Error(), err)
	}
	if err := (shardmap.Config{MaxKeys: c.MaxKeys, Shards: c.Shards}).Validate(); err != nil {
		var se *shardmap.ConfigError
		if errors.As(err, &se) {
			return c, cfgErr(se.Field, se.Value, se.Reason, err)
		}
		return c, cfgErr("MaxKeys", c.MaxKeys, err.Error(), err)
	}
	switch {
	case !c.DenyReason.Valid():
		return c, cfgErr("DenyReason", c.DenyReason, "is not a defined reason", nil)
	case c.SoftViolationWindow < 0:
		return c, cfgErr("SoftViolationWindow", c.SoftViolationWindow, "must not be negative", nil)
	case c.MaxSoftViolations < 0 || c.MaxSoftViolations > shardmap.MaxCount:
		return c, cfgErr("MaxSoftViolations", c.MaxSoftViolations, fmt.Sprintf("must be between 1 and %d", shardmap.MaxCount), nil)
	case c.LockoutDuration < 0:
		return c, cfgErr("LockoutDuration", c.LockoutDuration, "must not be negative", nil)
	}
	return c, nil
}
