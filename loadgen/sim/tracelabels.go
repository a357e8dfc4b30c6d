package sim

import (
	"fmt"
	"io"
	"net/netip"
	"os"
	"strconv"
	"strings"

	"github.com/sluicedev/sluice/core"
	"github.com/sluicedev/sluice/loadgen/behave"
	"github.com/sluicedev/sluice/trace"
)

// TraceLabelRule relabels the sessions of a trace that it names: by their
// session numbers in the trace, their recorded accounts, their recorded
// source addresses, or a decision the recording gate made on any of their
// records. A rule names a session if any of its lists or its decision
// does; Trace.Labels applies the first rule that names a session, and a
// session no rule names keeps the label its trace gives it. The zero
// value names nothing (Validate refuses it).
//
//	Sessions   trace session numbers (as `sluice trace inspect` shows them)
//	Accounts   recorded accounts (their keyed hashes when the trace is hashed)
//	Addresses  recorded source addresses, without the port ("10.0.0.7"),
//	           or their keyed hashes (16 hex digits, as in JSON Lines' addr_hash)
//	Decision   an action ("Disconnect") or an action and a reason
//	           ("Drop ChannelLimit"): the session has a record with it
//	Label      honest, hostile or unknown (required)
type TraceLabelRule struct {
	Sessions  []uint64 `yaml:"sessions"`
	Accounts  []uint64 `yaml:"accounts"`
	Addresses []string `yaml:"addresses"`
	Decision  string   `yaml:"decision"`
	Label     string   `yaml:"label"`
}

// labelRule is a TraceLabelRule parsed.
type labelRule struct {
	sessions, accounts map[uint64]bool
	addrs              map[netip.Addr]bool
	hashes             map[uint64]bool
	decided            bool // Decision is set
	action             core.Action
	reason             core.Reason
	anyReason          bool
	label              trace.Label
}

// parse checks r; field names the rule ("Labels[2]") in errors.
func (r *TraceLabelRule) parse(field string) (*labelRule, error) {
	bad := func(f string, v any, why string) error {
		return &behave.ParamError{Owner: "trace", Field: field + "." + f, Value: v, Reason: why}
	}
	l, ok := trace.ParseLabel(r.Label)
	if !ok {
		return nil, bad("Label", r.Label, "must be honest, hostile or unknown")
	}
	p := &labelRule{label: l, sessions: map[uint64]bool{}, accounts: map[uint64]bool{}, addrs: map[netip.Addr]bool{}, hashes: map[uint64]bool{}}
	for _, s := range r.Sessions {
		if s == 0 {
			return nil, bad("Sessions", s, "session numbers start at 1")
		}
		p.sessions[s] = true
	}
	for _, a := range r.Accounts {
		p.accounts[a] = true
	}
	for i, a := range r.Addresses {
		if ip, err := netip.ParseAddr(a); err == nil {
			p.addrs[ip.Unmap()] = true
			continue
		}
		h, err := strconv.ParseUint(a, 16, 64)
		if len(a) != 16 || err != nil || h == 0 {
			return nil, bad(fmt.Sprintf("Addresses[%d]", i), a, "is neither an IP address nor a keyed hash of 16 hex digits")
		}
		p.hashes[h] = true
	}
	if r.Decision != "" {
		var err error
		p.decided = true
		act, reason, hasReason := strings.Cut(r.Decision, " ")
		a, ok := parseAction(act)
		if !ok {
			return nil, bad("Decision", r.Decision, "must be an action (Accept, Drop, Reject, Disconnect), optionally followed by a reason (Drop ChannelLimit)")
		}
		p.action, p.anyReason = a, !hasReason
		if hasReason {
			if p.reason, err = core.ParseReason(reason); err != nil {
				return nil, bad("Decision", r.Decision, fmt.Sprintf("%q is not a reason", reason))
			}
		}
	}
	if len(r.Sessions)+len(r.Accounts)+len(r.Addresses) == 0 && !p.decided {
		return nil, bad("Label", r.Label, "the rule names no session: give sessions, accounts, addresses or decision")
	}
	return p, nil
}

func parseAction(s string) (core.Action, bool) {
	for a := core.Accept; a <= core.Disconnect; a++ {
		if a.String() == s {
			return a, true
		}
	}
	return 0, false
}

// parseLabelRules parses t's Labels.
func parseLabelRules(rules []TraceLabelRule) ([]*labelRule, error) {
	out := make([]*labelRule, 0, len(rules))
	for i := range rules {
		p, err := rules[i].parse(fmt.Sprintf("Labels[%d]", i))
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// sessionFacts is what a label rule can ask of a session.
type sessionFacts struct {
	addr      netip.Addr
	addrHash  uint64
	account   uint64
	decisions map[trace.Decision]bool // the actions and reasons recorded, shadow left out
}

// matches reports whether rule r names the session s.
func (r *labelRule) matches(s uint64, f *sessionFacts) bool {
	if r.sessions[s] || (f.account != 0 && r.accounts[f.account]) ||
		(f.addr.IsValid() && r.addrs[f.addr.Unmap()]) || (f.addrHash != 0 && r.hashes[f.addrHash]) {
		return true
	}
	if !r.decided {
		return false
	}
	for d := range f.decisions {
		if d.Action == r.action && (r.anyReason || d.Reason == r.reason) {
			return true
		}
	}
	return false
}

// traceLabelOverrides reads the trace at path once, ahead of its replay,
// and returns the label each session named by a rule gets (the first
// rule that names it), by trace session number. Its memory is what it
// keeps of the sessions open at once and the sessions named: a rule on a
// decision needs to see a session's whole life before its replay opens it.
func traceLabelOverrides(path string, partial bool, rules []*labelRule) (map[uint64]trace.Label, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("loadgen: trace: %w", err)
	}
	defer f.Close()
	r, err := trace.NewReader(f, trace.ReaderOptions{Partial: partial})
	if err != nil {
		return nil, fmt.Errorf("loadgen: trace %s: %w", path, err)
	}
	open := map[uint64]*sessionFacts{}
	out := map[uint64]trace.Label{}
	decide := func(s uint64, facts *sessionFacts) {
		for _, rule := range rules {
			if rule.matches(s, facts) {
				out[s] = rule.label
				return
			}
		}
	}
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("loadgen: trace %s: %w", path, err)
		}
		if rec.Session == 0 {
			continue
		}
		facts := open[rec.Session]
		switch {
		case rec.Op == trace.OpOpen:
			facts = &sessionFacts{addr: rec.Addr.Addr(), addrHash: rec.AddrHash, decisions: map[trace.Decision]bool{}}
			open[rec.Session] = facts
		case facts == nil:
			continue
		case rec.Op == trace.OpAuth:
			facts.account = rec.Account
		case rec.Op == trace.OpClose:
			decide(rec.Session, facts)
			delete(open, rec.Session)
			continue
		}
		switch rec.Op {
		case trace.OpOpen, trace.OpAuth, trace.OpRead, trace.OpMessage, trace.OpUnchecked:
			d := rec.Decision
			d.Shadow = false
			facts.decisions[d] = true
		}
	}
	for s, facts := range open { // sessions the trace ends with open
		decide(s, facts)
	}
	return out, nil
}

// TraceRoute selects the sessions of a trace a population replays: those
// of Group ("" any) whose label, after Trace.Labels, is Label ("" any).
type TraceRoute struct {
	Group, Label string
}

// popOf returns the population of a session of group with label: the
// population that names both, else the group, else the label, else the
// default one, or -1.
func (f *TraceFeed) popOf(group string, label trace.Label) int {
	for _, k := range [...]TraceRoute{{group, label.String()}, {group, ""}, {"", label.String()}} {
		if p, ok := f.pops[k]; ok {
			return p
		}
	}
	return f.dflt
}

// labelOf returns the label of trace session s: the rules', or recorded
// (the label record's, Unknown before it).
func (f *TraceFeed) labelOf(s uint64, recorded trace.Label) trace.Label {
	if l, ok := f.labels[s]; ok && s != 0 {
		return l
	}
	return recorded
}

// validateLabels checks Label and Labels.
func (t *Trace) validateLabels() error {
	if _, ok := trace.ParseLabel(t.Label); t.Label != "" && !ok {
		return &behave.ParamError{Owner: "trace", Field: "Label", Value: t.Label, Reason: "must be honest, hostile or unknown (or absent: any)"}
	}
	_, err := parseLabelRules(t.Labels)
	return err
}
