package behave

import (
	"fmt"
	"math"
	"sort"
	"time"
)

// registry maps behaviour names to constructors of their defaults.
var registry = map[string]func() Behaviour{
	"honest":          func() Behaviour { return &Honest{} },
	"laggy":           func() Behaviour { return &Laggy{} },
	"mass-reconnect":  func() Behaviour { return &MassReconnect{} },
	"tiny-flood":      func() Behaviour { return &TinyFlood{} },
	"byte-flood":      func() Behaviour { return &ByteFlood{} },
	"bad-length":      func() Behaviour { return &BadLength{} },
	"malformed":       func() Behaviour { return &Malformed{} },
	"slowloris":       func() Behaviour { return &Slowloris{} },
	"replay":          func() Behaviour { return &Replay{} },
	"channel-hop":     func() Behaviour { return &ChannelHop{} },
	"reset-reconnect": func() Behaviour { return &ResetReconnect{} },
	"key-churn":       func() Behaviour { return &KeyChurn{} },
	"hot-key":         func() Behaviour { return &HotKey{} },
	"paced-reset":     func() Behaviour { return &PacedReset{} },
	"malformed-churn": func() Behaviour { return &MalformedChurn{} },
	"slot-hold":       func() Behaviour { return &SlotHold{} },
	"nat-churn":       func() Behaviour { return &NATChurn{} },
	"half-close":      func() Behaviour { return &HalfClose{} },
	"sparse-ids":      func() Behaviour { return &SparseIDs{} },
	"server-hop":      func() Behaviour { return &ServerHop{} },

	// The WebSocket transport's own (hostile_ws.go).
	"ws-slow-upgrade":    func() Behaviour { return &WSSlowUpgrade{} },
	"ws-fragment-flood":  func() Behaviour { return &WSFragmentFlood{} },
	"ws-ping-flood":      func() Behaviour { return &WSPingFlood{} },
	"ws-oversize-header": func() Behaviour { return &WSOversizeHeader{} },

	// The UDP transport's own (hostile_udp.go).
	"udp-handshake-flood": func() Behaviour { return &UDPHandshakeFlood{} },
	"udp-amplify":         func() Behaviour { return &UDPAmplify{} },
	"udp-garbage":         func() Behaviour { return &UDPGarbage{} },
	"udp-id-guess":        func() Behaviour { return &UDPIDGuess{} },
	"udp-cookie-replay":   func() Behaviour { return &UDPCookieReplay{} },
}

// NewBehaviour returns a pointer to the named behaviour with every
// parameter at its default (zero), for a scenario file to decode into.
func NewBehaviour(name string) (Behaviour, error) {
	mk, ok := registry[name]
	if !ok {
		return nil, fmt.Errorf("%w: unknown behaviour %q (have %v)", ErrParam, name, BehaviourNames())
	}
	return mk(), nil
}

// BehaviourNames returns the registered behaviour names, sorted.
func BehaviourNames() []string {
	out := make([]string, 0, len(registry))
	for n := range registry {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Parameter defaults and checks shared by the behaviours. A zero parameter
// takes its default; a negative duration or rate, where documented, turns
// the stream it drives off, and a negative spread, jitter or probability,
// where documented, means none (0), which a zero cannot say.

func orDur(v, def time.Duration) int64 {
	if v == 0 {
		return int64(def)
	}
	return int64(v)
}

func orInt(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

func orFloat(v, def float64) float64 {
	if v == 0 {
		return def
	}
	return v
}

// orKind returns k, or def when k is zero (KindHello, which no behaviour
// parameter can mean).
func orKind(k, def Kind) Kind {
	if k == 0 {
		return def
	}
	return k
}

// maxRate bounds every per-second rate parameter (one action per µs).
const maxRate = 1e6

// maxSize bounds payload sizes.
const maxSize = 1 << 20

// maxCount bounds frames per write.
const maxCount = 1 << 16

type checker struct {
	owner string
	err   error
}

func (c *checker) fail(field string, v any, reason string) {
	if c.err == nil {
		c.err = &ParamError{c.owner, field, v, reason}
	}
}

// rate checks a per-second rate; negative is allowed when negOK is (the
// field documents a negative value as off, or none).
func (c *checker) rate(field string, v float64, negOK bool) {
	if math.IsNaN(v) || math.IsInf(v, 0) || v > maxRate || (v < 0 && !negOK) {
		c.fail(field, v, fmt.Sprintf("must be finite and in [0, %g]", float64(maxRate)))
	}
}

// dur checks a duration; negative is allowed when negOK is (the field
// documents a negative value as off, or none).
func (c *checker) dur(field string, v time.Duration, negOK bool) {
	if v < 0 && !negOK {
		c.fail(field, v, "must not be negative")
	}
	if v > MaxDuration {
		c.fail(field, v, "must be at most 24h")
	}
}

func (c *checker) intIn(field string, v, lo, hi int) {
	if v < lo || v > hi {
		c.fail(field, v, fmt.Sprintf("must be in [%d, %d]", lo, hi))
	}
}

// fraction checks a probability or a relative jitter: at most 1, and
// negative for none.
func (c *checker) fraction(field string, v float64) {
	if !(v <= 1) { // NaN too
		c.fail(field, v, "must be in [0, 1], or negative for none")
	}
}

func (c *checker) kind(field string, k Kind) {
	if !k.Sendable() {
		c.fail(field, k, "must be move, ability, chat, purchase or ping")
	}
}

func (c *checker) oneOf(field, v string, allowed ...string) {
	for _, a := range allowed {
		if v == a {
			return
		}
	}
	c.fail(field, v, fmt.Sprintf("must be one of %v", allowed))
}

// period converts a per-second rate to ns between events. A rate so small
// that the period would not fit an int64 (below about 1e-10/s) gives 2^62
// ns, after any run: converting the float directly would wrap to a
// negative, and so to one event per ns.
func period(rate float64) int64 {
	p := 1e9 / rate
	if !(p < 1<<62) { // also NaN
		return 1 << 62
	}
	return max(1, int64(p))
}
