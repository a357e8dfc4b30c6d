package reports

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// reasonMeanings says in a few words what each known drop reason means, so
// the report defines every outcome it shows. The server's reasons are
// core.Reason's; the rest are what only the client sees.
var reasonMeanings = map[string]string{
	"ChannelLimit":  "the server: a channel (command kind) bucket was empty",
	"ByteLimit":     "the server: the connection's byte budget was spent",
	"FrameLimit":    "the server: the connection's frame budget was spent",
	"AccountLimit":  "the server: the account's bucket, across its connections, was empty",
	"MatchLimit":    "the server: the match's aggregate bucket was empty",
	"AddressLimit":  "the server: the source address's pre-login bucket was empty",
	"InFlightLimit": "the server: too many requests of the kind were in flight",
	"Oversize":      "the server: the frame was larger than the maximum frame size",
	"Malformed":     "the server: the frame did not decode",
	"Duplicate":     "the server: a request still being handled was sent again",
	"Replay":        "the server: a request id that already completed was sent again",
	"NoSession":     "the server: no open session for the message",
	"Locked":        "the server: the profile was inside a transaction",
	"Lockout":       "the server: the key was locked out after repeated violations",
	"TableFull":     "the server: its keyed table was full and nothing could be evicted",
	"QueueFull":     "the server: the connection's command queue was full",
	"Closed":        "the server: its limiter was closed (fail closed)",
	"Timeout":       "the client: written, but no reply came within the timeout",
	"Disconnected":  "the client: the connection ended before the reply came (in the session row: the server closed a session without a reason)",
	"Refused":       "the client: the connection could not be opened",
	"Overflow":      "the client: written, but its in-flight table was full, so the reply was not awaited",
	"UnknownReason": "a rejection, or a session end, with a reason this version does not know",
	"Failed":        "the server's own handler refused the request after every limit passed",
}

// countDefs defines the counts and rates every table of the page uses.
func countDefs() []kv {
	return []kv{
		{"scheduled", "messages the behaviour's schedule asked the client to send: sent + not sent"},
		{"sent", "messages the client wrote to its connection (a request the server decided and whose reply the client then lost counts under both outcomes, and twice here, so that no total exceeds sent)"},
		{"not sent", "messages the client never wrote, because its connection was down (disconnected, locked out, or not yet reconnected) or its held buffer was full; the server never saw them, so they are neither sent nor dropped"},
		{"accepted", "messages the server accepted"},
		{"dropped", "messages sent that the server refused (its reason) or whose reply the client lost (the client's reason); see the reasons below"},
		{"no outcome", "sent less accepted and dropped: held or on their way when the run ended, or inputs lost in a connection the server closed"},
		{"drop rate", "dropped ÷ sent"},
		{"loss", "(dropped + not sent) ÷ scheduled: what the players meant to send and lost, whoever lost it; a threshold's drop_rate is this share"},
		{"admitted", "accepted game messages (inputs and requests: move, ability, chat, purchase, and frames on other channels) and their bytes per second of the measured window: for a hostile population, what its attack got through; hellos and pings are not game messages"},
		{"admitted handshakes", "accepted hellos per second of the measured window: sessions, not play, shown apart (a client cut off more often reconnects more); a threshold's admitted_per_s counts them with the game messages"},
		{"disconnected / locked out", "honest clients the server disconnected or locked out at least once (false positives)"},
		{"cut off", "hostile clients the server disconnected or locked out, of those that connected, with the time from each one's first message"},
		{"n=", "in a chart's legend: how many response times the line is drawn from"},
	}
}

// reasonDefs defines each drop reason the page shows, in report order.
func reasonDefs(stats []*variantStats) []kv {
	var maps []map[string]int64
	for _, vs := range stats {
		for _, p := range vs.pops {
			for _, k := range p.pop.Kinds {
				maps = append(maps, k.Drops)
			}
		}
	}
	var out []kv
	for _, r := range sortedReasons(maps...) {
		m := reasonMeanings[r]
		if m == "" {
			m = "a reason this version of the report does not describe"
		}
		out = append(out, kv{r, m})
	}
	return out
}

// honestPop is one honest population's headline measures in one variant.
type honestPop struct {
	name              string
	loss              float64
	hasLoss           bool
	noRate            string // why it has no loss rate (Population.NoDropRate)
	lost, scheduled   int64
	p99               int64
	hasP99            bool
	disc, lock, total int64
}

// hostilePop is one hostile population's headline measures.
type hostilePop struct {
	name        string
	admittedPS  float64
	admittedBS  float64
	has         bool
	cut, of     int
	cutMaxAll   float64
	hasCut      bool
	dropRate    float64
	hasDropRate bool
}

func honestPops(vs *variantStats) []honestPop {
	var out []honestPop
	for _, p := range vs.pops {
		if p.pop.Role == Hostile {
			continue
		}
		h := honestPop{name: p.pop.Name, lost: p.drop + p.notSent, scheduled: p.sent + p.notSent,
			disc: p.pop.Summary.FalseDisconnects, lock: p.pop.Summary.FalseLockouts, total: int64(p.pop.Clients)}
		h.loss, h.hasLoss, h.noRate = p.lossRate, p.noRate == "" && h.scheduled > 0, p.noRate
		if p.resp != nil {
			h.p99, h.hasP99 = p.q.P99, true
		}
		out = append(out, h)
	}
	return out
}

func hostilePops(vs *variantStats) []hostilePop {
	var out []hostilePop
	for _, p := range vs.pops {
		if p.pop.Role != Hostile {
			continue
		}
		h := hostilePop{name: p.pop.Name, admittedPS: p.admittedPS, admittedBS: p.admittedBS, has: p.sent > 0 && vs.measured > 0,
			dropRate: p.dropRate, hasDropRate: p.sent > 0 && p.noRate == ""}
		if c := p.pop.Summary.CutOff; c != nil && c.Of > 0 {
			h.cut, h.of, h.cutMaxAll, h.hasCut = c.Clients, c.Of, cutOffValue(c.MaxAll()), true
		}
		out = append(out, h)
	}
	return out
}

// lostPlayersOrMessages says how population name of variant vs lost more
// than in the baseline, for a latency measured on it: the survivors'
// latency is no verdict then. "" when it lost no more.
func lostPlayersOrMessages(base, vs *variantStats, name string) string {
	var b, v *popStats
	for _, p := range base.pops {
		if p.pop.Name == name {
			b = p
		}
	}
	for _, p := range vs.pops {
		if p.pop.Name == name {
			v = p
		}
	}
	if b == nil || v == nil || v.pop.Role == Hostile {
		return ""
	}
	var parts []string
	if d := v.pop.Summary.FalseDisconnects - b.pop.Summary.FalseDisconnects; d > 0 {
		parts = append(parts, fmt.Sprintf("%d more players disconnected", d))
	}
	if d := v.pop.Summary.FalseLockouts - b.pop.Summary.FalseLockouts; d > 0 && len(parts) == 0 {
		parts = append(parts, fmt.Sprintf("%d more players locked out", d))
	}
	if v.lossRate > b.lossRate+1e-9 && v.noRate == "" {
		parts = append(parts, fmt.Sprintf("loss %s against %s", FormatPercent(v.lossRate), FormatPercent(b.lossRate)))
	}
	if len(parts) == 0 {
		return ""
	}
	return "not better: " + strings.Join(parts, ", ") + "; this is the latency of what got through"
}

// sameShare reports whether two shares read the same as the report shows
// them.
func sameShare(a, b float64) bool { return FormatPercent(a) == FormatPercent(b) }

// near reports whether two measures are within 1% of each other.
func near(a, b float64) bool {
	if a == b {
		return true
	}
	return math.Abs(a-b) <= 0.01*math.Max(math.Abs(a), math.Abs(b))
}

// honestCost compares v's honest measures with best's: what v costs honest
// players more, or nil when nothing.
func honestCost(best, v *variantStats) []string {
	var out []string
	bp := map[string]honestPop{}
	for _, h := range honestPops(best) {
		bp[h.name] = h
	}
	for _, h := range honestPops(v) {
		b, ok := bp[h.name]
		if !ok {
			continue
		}
		if h.disc > b.disc {
			out = append(out, fmt.Sprintf("%d of %d %s players disconnected", h.disc, h.total, h.name))
		} else if h.lock > b.lock {
			out = append(out, fmt.Sprintf("%d of %d %s players locked out", h.lock, h.total, h.name))
		}
		if h.hasLoss && b.hasLoss && !sameShare(h.loss, b.loss) && h.loss > b.loss {
			out = append(out, fmt.Sprintf("%s loss %s instead of %s", h.name, FormatPercent(h.loss), FormatPercent(b.loss)))
		}
		// A p99 counts only between variants that lost the same players
		// and messages: otherwise it is the latency of the survivors.
		sameLoss := h.disc == b.disc && h.lock == b.lock && (!h.hasLoss || !b.hasLoss || sameShare(h.loss, b.loss))
		if h.hasP99 && b.hasP99 && h.p99 > b.p99 && !near(float64(h.p99), float64(b.p99)) && sameLoss {
			out = append(out, fmt.Sprintf("%s p99 %s instead of %s", h.name, formatNs(float64(h.p99)), formatNs(float64(b.p99))))
		}
	}
	return out
}

// honestEqual reports whether two variants treat honest players alike, as
// the page shows their measures.
func honestEqual(a, b *variantStats) bool {
	return len(honestCost(a, b)) == 0 && len(honestCost(b, a)) == 0
}

// hostileAdmitted is a variant's hostile traffic admitted: game messages
// per second (hellos and pings are not: see KindStats.IsGame), and whether it has any hostile population to measure.
func hostileAdmitted(vs *variantStats) (float64, bool) {
	return vs.hostileAdmittedPS, vs.hasHostile && vs.hostileSent > 0 && vs.measured > 0
}

// verdict says in plain sentences which variant is best for honest players
// and which admits least hostile traffic, from the measurements, with ties
// and trade-offs said as such. Variants that did not run to the end or
// whose measurements are invalid are left out, and said to be.
func verdict(stats []*variantStats, r *Results) []string {
	var cands []*variantStats
	var left []string
	for _, vs := range stats {
		switch {
		case vs.v.Incomplete():
			left = append(left, vs.v.Name+" (stopped early)")
		case len(vs.v.Invalid) > 0:
			left = append(left, vs.v.Name+" (measurements not valid)")
		default:
			cands = append(cands, vs)
		}
	}
	var out []string
	if len(cands) == 0 {
		return []string{"No variant ran to its end with valid measurements: there is nothing to judge."}
	}
	names := func(vs []*variantStats) string {
		n := make([]string, len(vs))
		for i, v := range vs {
			n[i] = v.v.Name
		}
		switch len(n) {
		case 1:
			return n[0]
		case 2:
			return n[0] + " and " + n[1]
		}
		return strings.Join(n[:len(n)-1], ", ") + " and " + n[len(n)-1]
	}
	if len(cands) == 1 {
		out = append(out, "Only "+cands[0].v.Name+" ran: there is nothing to compare it with.")
		out = append(out, headlineSentence(cands[0]))
	} else {
		// Best for honest players: no variant costs them less.
		var best []*variantStats
		for _, a := range cands {
			if !a.hasHonest {
				continue
			}
			dominated := false
			for _, b := range cands {
				if b != a && len(honestCost(b, a)) > 0 && len(honestCost(a, b)) == 0 {
					dominated = true
				}
			}
			if !dominated {
				best = append(best, a)
			}
		}
		switch {
		case len(best) == 0:
			out = append(out, "No variant has an honest population to judge.")
		case len(best) == len(cands) && allHonestEqual(best):
			out = append(out, "For honest players the variants tie: "+honestSummary(best[0])+".")
		case len(best) == 1 || allHonestEqual(best):
			s := "Best for honest players: " + names(best) + " (" + honestSummary(best[0]) + ")"
			var worse []string
			for _, vs := range cands {
				if !slices.Contains(best, vs) {
					if c := honestCost(best[0], vs); len(c) > 0 {
						worse = append(worse, vs.v.Name+": "+strings.Join(c, ", "))
					}
				}
			}
			if len(worse) > 0 {
				s += "; worse: " + strings.Join(worse, "; ")
			}
			out = append(out, s+".")
		default:
			var parts []string
			for _, vs := range best {
				parts = append(parts, vs.v.Name+" ("+honestSummary(vs)+")")
			}
			out = append(out, "For honest players no variant is best on every measure, a trade-off: "+strings.Join(parts, "; ")+".")
		}

		// Least hostile traffic admitted.
		var least []*variantStats
		lo := math.Inf(1)
		for _, vs := range cands {
			if a, ok := hostileAdmitted(vs); ok && a < lo {
				lo = a
			}
		}
		for _, vs := range cands {
			if a, ok := hostileAdmitted(vs); ok && near(a, lo) {
				least = append(least, vs)
			}
		}
		if len(least) > 0 {
			var others []string
			for _, vs := range cands {
				if a, ok := hostileAdmitted(vs); ok && !slices.Contains(least, vs) {
					others = append(others, fmt.Sprintf("%s %s/s (%s more)", vs.v.Name, formatCount(a), ratioText(a, lo)))
				}
			}
			s := fmt.Sprintf("Least hostile traffic admitted: %s, %s/s of hostile game messages", names(least), formatCount(least[0].hostileAdmittedPS))
			if len(least) > 1 {
				s = fmt.Sprintf("Least hostile traffic admitted: %s tie at about %s/s of hostile game messages", names(least), formatCount(least[0].hostileAdmittedPS))
			}
			if len(others) > 0 {
				s += ", against " + strings.Join(others, ", ")
			}
			out = append(out, s+".")
			// The trade-off between the two.
			if len(best) > 0 {
				both := []*variantStats{}
				for _, vs := range least {
					if slices.Contains(best, vs) {
						both = append(both, vs)
					}
				}
				switch {
				case len(both) > 0 && len(least) < len(cands):
					var than []string
					for _, vs := range cands {
						if a, ok := hostileAdmitted(vs); ok && !slices.Contains(least, vs) && honestEqual(both[0], vs) && a > 0 {
							than = append(than, fmt.Sprintf("%s less than %s", FormatPercent(1-both[0].hostileAdmittedPS/a), vs.v.Name))
						}
					}
					s := names(both) + " is best on both: it admits least hostile traffic"
					if len(than) > 0 {
						s += " (" + strings.Join(than, ", ") + ")"
					}
					out = append(out, s+" at no cost to honest players.")
				case len(both) == 0:
					l := least[0]
					if c := honestCost(best[0], l); len(c) > 0 {
						out = append(out, fmt.Sprintf("A trade-off: %s admits least hostile traffic but costs honest players (%s).", l.v.Name, strings.Join(c, ", ")))
					}
				}
			}
		} else {
			out = append(out, "No variant has a hostile population to judge.")
		}
	}
	if len(left) > 0 {
		out = append(out, "Not judged: "+strings.Join(left, ", ")+".")
	}
	if nr := r.NotRun(); len(nr) > 0 {
		out = append(out, "Never ran (the run was interrupted): "+strings.Join(nr, ", ")+".")
	}
	return out
}

func allHonestEqual(vs []*variantStats) bool {
	for _, v := range vs[1:] {
		if !honestEqual(vs[0], v) {
			return false
		}
	}
	return true
}

// honestSummary says a variant's honest measures in a few words.
func honestSummary(vs *variantStats) string {
	var parts []string
	for _, h := range honestPops(vs) {
		s := h.name + " loss "
		if h.hasLoss {
			s += FormatPercent(h.loss)
		} else {
			s += "–"
		}
		if h.hasP99 {
			s += ", p99 " + formatNs(float64(h.p99))
		}
		if h.disc > 0 {
			s += fmt.Sprintf(", %d of %d disconnected", h.disc, h.total)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

// headlineSentence says one variant's measures in a sentence.
func headlineSentence(vs *variantStats) string {
	s := ""
	if vs.hasHonest {
		s = "Honest players: " + honestSummary(vs) + "."
	}
	if a, ok := hostileAdmitted(vs); ok {
		s += fmt.Sprintf(" Hostile game messages admitted: %s/s.", formatCount(a))
	}
	return strings.TrimSpace(s)
}

// ratioText says how much more a is than b: "+11.5%" or "13×".
func ratioText(a, b float64) string {
	if b <= 0 {
		return "more than none"
	}
	if a >= 2*b {
		return sig3(a/b) + "×"
	}
	return fmt.Sprintf("%.1f%%", (a-b)/b*100)
}

// NotRun returns the names of the variants the run planned
// (Run.PlannedVariants) that have no results: an interrupted run never got
// to them. Empty when the plan is unknown or every variant ran.
func (r *Results) NotRun() []string {
	var out []string
	for _, name := range r.Run.PlannedVariants {
		if r.Variant(name) == nil {
			out = append(out, name)
		}
	}
	return out
}

// hostileDropNote flags a hostile population's drop rate that barely moved
// (under one percentage point) while its admitted traffic rose to twice
// the baseline's or more: read alone it would look neutral. "" otherwise.
func hostileDropNote(base, vs *variantStats, name string, baseRate, rate float64) string {
	var b, v *popStats
	for _, p := range base.pops {
		if p.pop.Name == name {
			b = p
		}
	}
	for _, p := range vs.pops {
		if p.pop.Name == name {
			v = p
		}
	}
	if b == nil || v == nil || math.Abs(rate-baseRate) >= 0.01 || v.admittedPS < 2*b.admittedPS || v.admittedPS == 0 {
		return ""
	}
	return fmt.Sprintf("not neutral: barely moved while admitted game messages rose %s", ratioText(v.admittedPS, b.admittedPS))
}

// Verdict returns the report's verdict on r's variants, in plain sentences
// (which variant is best for honest players, which admits least hostile
// traffic, the trade-off between them), for a caller that shows it
// elsewhere: the CLI prints it under its summary.
func Verdict(r *Results) ([]string, error) {
	if r == nil || len(r.Variants) == 0 {
		return nil, nil
	}
	stats := make([]*variantStats, 0, len(r.Variants))
	for _, v := range r.Variants {
		vs, err := computeVariant(v, r.MeasuredOf(v))
		if err != nil {
			return nil, err
		}
		stats = append(stats, vs)
	}
	return verdict(stats, r), nil
}
