package scenarios

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/sluicedev/sluice/loadgen"
	"gopkg.in/yaml.v3"
)

// honestBehaviours are the behaviours whose drops are false positives; every
// other behaviour is hostile unless the population says otherwise.
var honestBehaviours = map[string]bool{"honest": true, "laggy": true, "mass-reconnect": true}

// checkBehaviour resolves a population's behaviour and decodes its
// parameters strictly into it.
func checkBehaviour(s *Scenario, root *yaml.Node, i int) error {
	p := &s.Population[i]
	path := fmt.Sprintf("populations[%d]", i)
	if p.Behaviour == "" {
		return s.fail(root, path+".behaviour", []any{"populations", i}, "is required")
	}
	b, err := loadgen.NewBehaviour(p.Behaviour)
	if err != nil {
		fe := s.fail(root, path+".behaviour", []any{"populations", i, "behaviour"},
			fmt.Sprintf("unknown behaviour %q (have %v)", p.Behaviour, loadgen.BehaviourNames())).(*FieldError)
		fe.Suggestion = suggest(p.Behaviour, loadgen.BehaviourNames())
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
	if err := b.Validate(); err != nil {
		var pe *loadgen.ParamError
		at := []any{"populations", i, "params"}
		if errors.As(err, &pe) {
			key := yamlKeyOf(reflect.TypeOf(b), pe.Field)
			return s.fail(root, path+".params."+key, append(at, key), fmt.Sprintf("%v: %s", pe.Value, pe.Reason))
		}
		return s.fail(root, path+".params", at, err.Error())
	}
	if p.PerAddress < 0 || p.PerAccount < 0 {
		return s.fail(root, path, []any{"populations", i}, "per_address and per_account must not be negative")
	}
	if p.Hostile == nil {
		h := !honestBehaviours[p.Behaviour]
		p.Hostile = &h
	}
	p.behaviour = b
	return nil
}

// yamlKeyOf returns the YAML key of the Go field named field in struct t
// (following inline embedded structs), or field itself.
func yamlKeyOf(t reflect.Type, field string) string {
	for k, f := range yamlFields(t.Elem()) {
		if f.Name == field {
			return k
		}
	}
	return field
}
