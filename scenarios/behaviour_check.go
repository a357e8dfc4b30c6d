package scenarios

import (
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/sluicedev/sluice/trace"
	"gopkg.in/yaml.v3"

	"github.com/sluicedev/sluice/internal/suggest"
	"github.com/sluicedev/sluice/loadgen/behave"
	"github.com/sluicedev/sluice/loadgen/drive"
	"github.com/sluicedev/sluice/loadgen/sim"
)

// traceBehaviour is the behaviour of a population replayed from a trace
// (sim.Trace), which the sim driver alone replays.
const traceBehaviour = "trace"

// honestBehaviours are the behaviours whose drops are false positives; every
// other behaviour is hostile unless the population says otherwise.
var honestBehaviours = map[string]bool{"honest": true, "laggy": true, "mass-reconnect": true, "sparse-ids": true, "half-close": true}

// checkBehaviour resolves a population's behaviour and decodes its
// parameters strictly into it.
func checkBehaviour(s *Scenario, root *yaml.Node, i int) error {
	p := &s.Population[i]
	path := fmt.Sprintf("populations[%d]", i)
	if p.Behaviour == "" {
		return s.fail(root, path+".behaviour", []any{"populations", i}, "is required")
	}
	var b behave.Behaviour
	var err error
	if p.Behaviour == traceBehaviour {
		b, p.Count = &sim.Trace{}, 1
	} else {
		b, err = behave.NewBehaviour(p.Behaviour)
	}
	if err != nil {
		fe := s.fail(root, path+".behaviour", []any{"populations", i, "behaviour"},
			fmt.Sprintf("unknown behaviour %q (have %v)", p.Behaviour, behave.BehaviourNames())).(*FieldError)
		fe.Suggestion = suggest.Closest(p.Behaviour, behave.BehaviourNames())
		return fe
	}
	if p.Params.Kind != 0 {
		if fe := checkNode(&p.Params, reflect.TypeOf(b), path+".params"); fe != nil {
			fe.File = s.File
			return fe
		}
		if err := p.Params.Decode(b); err != nil {
			return s.fail(root, path+".params", []any{"populations", i, "params"}, err.Error())
		}
	}
	if t, ok := b.(*sim.Trace); ok && t.File != "" && !filepath.IsAbs(t.File) && s.File != "" {
		// A trace file is named from the scenario file's folder.
		t.File = filepath.Join(filepath.Dir(s.File), t.File)
	}
	if err := b.Validate(); err != nil {
		var pe *behave.ParamError
		at := []any{"populations", i, "params"}
		if errors.As(err, &pe) {
			keys, into := yamlPathOf(reflect.TypeOf(b), pe.Field)
			return s.fail(root, path+".params."+keys, append(at, into...), fmt.Sprintf("%v: %s", pe.Value, pe.Reason))
		}
		return s.fail(root, path+".params", at, err.Error())
	}
	if err := drive.CheckTransport(p.Transport); err != nil {
		return s.fail(root, path+".transport", []any{"populations", i, "transport"}, err.Error())
	}
	if p.PerAddress < 0 || p.PerAccount < 0 {
		return s.fail(root, path, []any{"populations", i}, "per_address and per_account must not be negative")
	}
	if t, ok := b.(*sim.Trace); ok && p.Hostile == nil && t.Label != "" {
		// A population that selects its sessions by label has that role.
		h := t.Label == trace.Hostile.String()
		p.Hostile, p.roleFromLabel = &h, t.Label
		if len(t.Labels) > 0 {
			p.roleFromLabel += ", by its labels rules, else the trace's labels"
		} else {
			p.roleFromLabel += ", by the trace's labels"
		}
	}
	if t, ok := b.(*sim.Trace); ok && p.Hostile == nil {
		// A trace population's role is its trace's: the label of its
		// group's sessions (honest when the trace labels none).
		label, found, err := sim.TraceRole(t.File, t.Group, 1<<20)
		if err != nil {
			return s.fail(root, path+".params.file", []any{"populations", i, "params", "file"}, err.Error())
		}
		h := found && label == trace.Hostile
		p.Hostile, p.roleFromTrace = &h, found
	}
	if p.Hostile == nil {
		h := !honestBehaviours[p.Behaviour]
		p.Hostile = &h
	}
	p.behaviour = b
	p.behaviourAt = field(root, "populations", i, "behaviour")
	return nil
}

// turnOff names the parameter of an honest behaviour (honest, laggy,
// mass-reconnect) that turns a kind's stream off.
var turnOff = map[behave.Kind]string{
	behave.KindMove:     "tick_rate: -1",
	behave.KindAbility:  "ability_every: -1s",
	behave.KindChat:     "chat_every: -1s",
	behave.KindPurchase: "purchase_every: -1s",
}

// checkChannels reports the first population whose behaviour sends a
// kind of message that policy variant v has no channel for: a client
// does not send such a message and counts it as NotSent, a drop, so an
// honest population would look refused by a limiter that never saw it.
func (s *Scenario) checkChannels(v NamedPolicy) error {
	var names []string
	for _, c := range v.Policy.Channels {
		names = append(names, c.Name)
	}
	slices.Sort(names)
	for i := range s.Population {
		p := &s.Population[i]
		kinds, _ := behave.Sends(p.behaviour)
		for _, k := range kinds {
			if behave.DefaultChannels[k] < 0 || v.Policy.ChannelIndex(k.String()) >= 0 {
				continue // no channel needed (ping), or it has one
			}
			pol := "the policy"
			if len(s.Variants) > 0 {
				pol = fmt.Sprintf("policy variant %q", v.Name)
			}
			msg := fmt.Sprintf("population %q (%s) sends %v, but %s has no channel named %q%s: every such message would count as dropped (NotSent) without reaching the server; add the channel",
				p.Name, p.Behaviour, k, pol, k.String(), didYouMean(k.String(), names))
			if off, ok := turnOff[k]; ok && honestBehaviours[p.Behaviour] {
				msg += fmt.Sprintf(", or turn %v off (params: {%s})", k, off)
			}
			fe := &FieldError{File: s.File, Path: fmt.Sprintf("populations[%d].behaviour", i), Msg: msg}
			if n := p.behaviourAt; n != nil {
				fe.Line, fe.Col = n.Line, n.Column
			}
			return fe
		}
	}
	return nil
}

// yamlPathOf translates the Go field path of a behaviour's parameter, as
// behave.ParamError names it ("Jitter", "Ladder.Factor", "Targets[1].Rate"),
// into the keys a scenario writes ("jitter", "ladder.factor",
// "targets[1].rate") and the node path that finds it in the YAML. t is the
// behaviour's type; a name it does not have is kept as it is.
func yamlPathOf(t reflect.Type, field string) (keys string, at []any) {
	var out strings.Builder
	for i, seg := range strings.Split(field, ".") {
		name, index := seg, -1
		if open := strings.IndexByte(seg, '['); open > 0 && strings.HasSuffix(seg, "]") {
			if n, err := strconv.Atoi(seg[open+1 : len(seg)-1]); err == nil {
				name, index = seg[:open], n
			}
		}
		for t != nil && t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		key, next := name, reflect.Type(nil)
		if t != nil && t.Kind() == reflect.Struct {
			for k, f := range yamlFields(t) {
				if f.Name == name {
					key, next = k, f.Type
					break
				}
			}
		}
		if i > 0 {
			out.WriteByte('.')
		}
		out.WriteString(key)
		at = append(at, key)
		if index >= 0 {
			fmt.Fprintf(&out, "[%d]", index)
			at = append(at, index)
			if next != nil && next.Kind() == reflect.Slice {
				next = next.Elem()
			} else {
				next = nil
			}
		}
		t = next
	}
	return out.String(), at
}
