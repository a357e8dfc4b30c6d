package core

import (
	"errors"
	"fmt"
	"math"
	"sort"
)

// Severity ranks an audit finding.
type Severity uint8

const (
	// SeverityInfo: worth knowing, often intended.
	SeverityInfo Severity = iota
	// SeverityWarning: probably a mistake; the gate will not do what the
	// numbers suggest.
	SeverityWarning
	// SeverityError: the policy is invalid, a channel can never pass, or
	// (strict mode) a rule is broken.
	SeverityError
)

var severityNames = [...]string{"info", "warning", "error"}

func (s Severity) String() string {
	if int(s) < len(severityNames) {
		return severityNames[s]
	}
	return fmt.Sprintf("Severity(%d)", uint8(s))
}

// MarshalText encodes the severity name.
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Kinds of audit finding.
const (
	// FindingInvalid: the policy does not validate (one per error).
	FindingInvalid = "Invalid"
	// FindingDefaultRateLimit: a client-to-server channel runs at the
	// default 30/s, which stops runaway loops and is tuned for no game: the
	// gap between what the game needs and 30/s is free spam headroom. Info,
	// or an error in strict mode.
	FindingDefaultRateLimit = "DefaultRateLimit"
	// FindingRequestWithoutRetry: a request channel's rejections carry no
	// retry-after, so clients retry blind.
	FindingRequestWithoutRetry = "RequestWithoutRetry"
	// FindingRetryNotSent: retry guidance on a channel whose denials get no
	// reply (input, predicted).
	FindingRetryNotSent = "RetryNotSent"
	// FindingBurstOfOne: a burst that holds one message (below twice the
	// channel's cost) fails the second click of an honest double-click;
	// leave 2–3× the human burst.
	FindingBurstOfOne = "BurstOfOne"
	// FindingUnreachable: no message of the channel can ever pass (its
	// cost above an aggregate burst, its minimum byte charge above the byte
	// burst, its requests above the pending-bytes cap...).
	FindingUnreachable = "Unreachable"
	// FindingBurstUnreachable: the channel's burst can never be used in
	// full, because a layer under or beside it is smaller.
	FindingBurstUnreachable = "BurstUnreachable"
	// FindingRateUnreachable: the channel's rate can never be sustained,
	// because a layer under or beside it refills slower.
	FindingRateUnreachable = "RateUnreachable"
	// FindingSizeUnreachable: messages up to the channel's max size are
	// allowed but the larger ones can never pass the byte budget.
	FindingSizeUnreachable = "SizeUnreachable"
	// FindingMaxSizeAboveFrame: a channel's max size above the transport's
	// max frame (the frame limit wins).
	FindingMaxSizeAboveFrame = "MaxSizeAboveFrame"
	// FindingInFlightAboveQueue: an in-flight cap above the per-connection
	// queue cap (the queue binds first).
	FindingInFlightAboveQueue = "InFlightAboveQueue"
	// FindingIgnoredLimit: limits on a server-to-client channel, which the
	// gate never meters.
	FindingIgnoredLimit = "IgnoredLimit"
	// FindingLayerDisabled: an aggregate or transport layer is off.
	FindingLayerDisabled = "LayerDisabled"
	// FindingTightAddressLimit: the pre-auth address budget is small for
	// NAT, where many honest players share one address.
	FindingTightAddressLimit = "TightAddressLimit"
	// FindingStrikeWeight: a strike weight out of proportion: one channel
	// drop reaching the disconnect rung (lag after a freeze trips channel
	// limits), or transport floods weighing no more than a channel drop.
	FindingStrikeWeight = "StrikeWeight"
	// FindingStrikesDisabled: nothing escalates.
	FindingStrikesDisabled = "StrikesDisabled"
	// FindingShadowMode: the gate enforces nothing.
	FindingShadowMode = "ShadowMode"
	// FindingFailOpen: keys that cannot be tracked are let through.
	FindingFailOpen = "FailOpen"
	// FindingNoChannels: no channel is defined; only the transport gates.
	FindingNoChannels = "NoChannels"
)

// Finding is one result of Audit.
type Finding struct {
	Kind     string   `json:"kind"`
	Severity Severity `json:"severity"`
	Channel  string   `json:"channel,omitempty"` // the channel concerned, "" for the whole policy
	Path     string   `json:"path,omitempty"`    // the policy field concerned
	Message  string   `json:"message"`
}

func (f Finding) String() string {
	where := f.Channel
	if where == "" {
		where = f.Path
	}
	if where != "" {
		where = " " + where
	}
	return fmt.Sprintf("%s %s%s: %s", f.Severity, f.Kind, where, f.Message)
}

// Audit reviews a policy for mistakes that validate but will not do what
// their numbers suggest: channels left at the default rate, request
// channels without retry guidance, budgets that make a channel (or its
// burst, rate or sizes) unreachable, lopsided strike weights, layers turned
// off. Findings are sorted by severity, errors first, then in policy order.
// An invalid policy yields one Invalid finding per validation error.
func Audit(p Policy) []Finding { return audit(p, false) }

// AuditStrict is Audit in strict mode: a client-to-server channel without
// an explicit rate is an error rather than an info finding.
func AuditStrict(p Policy) []Finding { return audit(p, true) }

func audit(p Policy, strict bool) []Finding {
	var out []Finding
	add := func(kind string, sev Severity, channel, path, format string, args ...any) {
		out = append(out, Finding{Kind: kind, Severity: sev, Channel: channel, Path: path, Message: fmt.Sprintf(format, args...)})
	}
	q := p.Normalized()
	if err := q.validate(); err != nil {
		var pe *PolicyError
		for _, e := range unjoin(err) {
			if errors.As(e, &pe) {
				add(FindingInvalid, SeverityError, "", pe.Path, "%s", pe.Msg)
			}
		}
		return out
	}
	t := &q.Transport
	maxFrame := *t.MaxFrame
	minCharge := float64(*t.MinCharge)

	if len(q.Channels) == 0 {
		add(FindingNoChannels, SeverityInfo, "", "channels", "no channel is defined: only the transport budgets gate traffic")
	}
	// A read is charged at least minCharge bytes, whatever it carries: above
	// the byte burst, no read passes, with or without channels.
	chargeTooHigh := !t.Bytes.Disabled && minCharge > *t.Bytes.Burst
	if chargeTooHigh {
		add(FindingUnreachable, SeverityError, "", "transport.minCharge", "the minimum charge %g is above the byte burst %g: no read can pass", minCharge, *t.Bytes.Burst)
	}
	for i := range q.Channels {
		c := &q.Channels[i]
		path := fmt.Sprintf("channels[%d]", i)
		name := c.Name
		if c.Direction == ServerToClient {
			if !c.RateDefaulted || !c.BurstDefaulted || c.InFlight > 0 {
				add(FindingIgnoredLimit, SeverityInfo, name, path, "server-to-client channel: the gate never meters it, its limits are ignored")
			}
			continue
		}
		rate, burst, cost := *c.Rate, *c.Burst, float64(*c.Cost)
		if c.RateDefaulted {
			sev := SeverityInfo
			if strict {
				sev = SeverityError
			}
			add(FindingDefaultRateLimit, sev, name, path+".rate",
				"runs at the default %g/s, tuned for no game; say what the game needs (an ability used twice a second wants about 5)", dfltRate)
		}
		switch {
		case c.Class == ClassRequest && !*c.RetryAfter:
			add(FindingRequestWithoutRetry, SeverityWarning, name, path+".retryAfter", "rejections carry no retry-after: clients will retry blind")
		case c.Class != ClassRequest && *c.RetryAfter:
			add(FindingRetryNotSent, SeverityInfo, name, path+".retryAfter", "%s channels are dropped without a reply: retry guidance is never sent", c.Class)
		}
		size := *c.MaxSize
		if size > maxFrame {
			add(FindingMaxSizeAboveFrame, SeverityInfo, name, path+".maxSize", "max size %d is above the transport's max frame %d, which wins", size, maxFrame)
			size = maxFrame
		}

		// The channel's rate and burst are in tokens, and a message takes
		// cost of them: in messages (frames, reads) the rate is rate/cost
		// and the burst the whole messages a full bucket holds,
		// floor(burst/cost). The account, match and address buckets are
		// charged the same cost per message, so they hold
		// floor(theirBurst/cost) of them.
		msgRate, msgBurst := rate/cost, math.Floor(burst/cost)
		if msgBurst < 2 {
			add(FindingBurstOfOne, SeverityWarning, name, path+".burst", "a burst of %g at cost %g holds one message: it fails the second click of an honest double-click; leave 2-3 times the human burst and let the rate limit", burst, cost)
		}

		// Transport: frames and bytes.
		if b := &t.Frames; !b.Disabled {
			if msgBurst > math.Floor(*b.Burst) {
				add(FindingBurstUnreachable, SeverityWarning, name, path+".burst", "a burst of %g messages (burst %g at cost %g) is above the frame burst %g: it can never arrive at once", msgBurst, burst, cost, *b.Burst)
			}
			if msgRate > *b.Rate {
				add(FindingRateUnreachable, SeverityWarning, name, path+".rate", "%g messages/s (rate %g ÷ cost %g) is above the frame rate %g/s", msgRate, rate, cost, *b.Rate)
			}
		}
		if b := &t.Bytes; !b.Disabled && !chargeTooHigh { // else nothing passes, said once above
			bb := *b.Burst
			if float64(size) > bb {
				add(FindingSizeUnreachable, SeverityWarning, name, path+".maxSize", "messages above %g bytes (the byte burst) are allowed up to %d but can never pass", bb, size)
			}
			per := math.Max(minCharge, 1) // the least one read costs
			if msgBurst*per > bb {
				add(FindingBurstUnreachable, SeverityInfo, name, path+".burst",
					"a burst of %g messages costs at least %g bytes, above the byte burst %g, unless the client batches them into fewer reads", msgBurst, msgBurst*per, bb)
			}
			if msgRate*per > *b.Rate {
				add(FindingRateUnreachable, SeverityInfo, name, path+".rate",
					"%g messages/s one read each costs %g B/s, above the byte rate %g B/s", msgRate, msgRate*per, *b.Rate)
			}
		}

		// The aggregate layers a message also pays its cost to.
		for _, l := range []struct {
			field string
			b     *Budget
			sev   Severity
			never string // what a cost above the burst means
		}{
			{"account", &q.Account, SeverityError, "can never pass"},
			{"match", &q.Match, SeverityWarning, "can never pass inside a match"},
			{"address", &q.Address, SeverityWarning, "can never pass before authentication"},
		} {
			if l.b.Disabled {
				continue
			}
			ab, ar := *l.b.Burst, *l.b.Rate
			switch {
			case cost > math.Floor(ab):
				add(FindingUnreachable, l.sev, name, path+".cost", "cost %g is above the %s burst %g: the channel %s", cost, l.field, ab, l.never)
			case msgBurst > math.Floor(ab/cost):
				add(FindingBurstUnreachable, SeverityInfo, name, path+".burst", "a burst of %g messages (burst %g at cost %g) is above the %g the %s burst %g holds (it is charged the same cost per message)", msgBurst, burst, cost, math.Floor(ab/cost), l.field, ab)
			}
			if rate > ar && l.field == "account" {
				add(FindingRateUnreachable, SeverityWarning, name, path+".rate", "rate %g tokens/s is above the account rate %g/s (it is charged the same cost per message)", rate, ar)
			}
		}

		if c.Class == ClassRequest {
			if pb := *q.Queue.PendingBytes; size > pb {
				add(FindingUnreachable, SeverityWarning, name, path+".maxSize", "requests up to %d bytes are allowed but the pending-bytes cap is %d: larger ones are always QueueFull", size, pb)
			}
			if c.InFlight > *q.Queue.Commands {
				add(FindingInFlightAboveQueue, SeverityInfo, name, path+".inFlight", "in-flight cap %d is above the connection's queue of %d commands", c.InFlight, *q.Queue.Commands)
			}
		}
	}

	for _, l := range []struct {
		path string
		b    *Budget
		sev  Severity // a transport layer off is worse than an aggregate one
	}{
		{"transport.bytes", &t.Bytes, SeverityWarning},
		{"transport.frames", &t.Frames, SeverityWarning},
		{"account", &q.Account, SeverityInfo},
		{"address", &q.Address, SeverityInfo},
		{"match", &q.Match, SeverityInfo},
	} {
		if l.b.Disabled {
			add(FindingLayerDisabled, l.sev, "", l.path, "this layer is off")
		}
	}
	if !q.Address.Disabled && *q.Address.Burst < 10 {
		add(FindingTightAddressLimit, SeverityInfo, "", "address.burst", "a pre-auth burst of %g per address is tight behind NAT, where many honest players share one", *q.Address.Burst)
	}
	s := &q.Strikes
	if s.Disabled {
		add(FindingStrikesDisabled, SeverityWarning, "", "strikes.disabled", "strikes are off: repeated violations never escalate")
	} else {
		ch := s.StrikeWeight(ChannelLimit)
		if ch >= *s.Ladder.Disconnect {
			add(FindingStrikeWeight, SeverityWarning, "", "strikes.weights.ChannelLimit", "one channel drop (weight %g) reaches the disconnect rung %g: lag after a freeze trips channel limits", ch, *s.Ladder.Disconnect)
		}
		for _, r := range []Reason{ByteLimit, FrameLimit} {
			if w := s.StrikeWeight(r); w <= ch {
				add(FindingStrikeWeight, SeverityInfo, "", "strikes.weights."+r.String(), "a transport flood (%v, weight %g) weighs no more than a channel drop (%g), though floods are rarely honest", r, w, ch)
			}
		}
	}
	if q.Shadow {
		add(FindingShadowMode, SeverityWarning, "", "shadow", "shadow mode: the gate records what it would do and enforces nothing")
	}
	if q.Escalation.TableFull == "allow" {
		add(FindingFailOpen, SeverityInfo, "", "escalation.tableFull", "keys that cannot be tracked are let through unmetered")
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Severity > out[j].Severity })
	return out
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
