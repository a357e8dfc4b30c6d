package behave

import (
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"time"
)

//go:generate go run ./internal/genparamdocs

// Param is one parameter of a behaviour, as a scenario file writes it
// under a population's params.
type Param struct {
	// Name is the YAML name: "tick_rate"; a field of a nested mapping
	// "ladder.base"; of each item of a list "targets[].kind".
	Name string
	// Type is what the value is: duration, number, integer, bool,
	// string, kind (a kind of message: move, ability, chat, purchase...)
	// or list.
	Type string
	// Default is the value a parameter left out takes, as its doc states
	// it ("1s", "20"); "" when the doc states none.
	Default string
	// Doc is the field's doc comment, with the parameters named by their
	// YAML names.
	Doc string
}

// A doc states a default as "Default 1s." or, for a choice of words,
// `"oversize" (default)`; a bool left out is false.
var (
	defaultRE       = regexp.MustCompile(`(?:^|\. )Default:? (.+?)\.(?:\s|$)`)
	defaultChoiceRE = regexp.MustCompile(`"([^"]+)" \(default\)`)
)

// BehaviourParams returns the parameters of the registered behaviour
// name, in the order its type declares them, with their YAML names,
// types, defaults and docs: read from the behaviour's type and the
// comments on its fields (fieldDocs, generated from the source), so
// that the listing cannot drift from the code. Nil for a name not
// registered.
func BehaviourParams(name string) []Param {
	mk, ok := registry[name]
	if !ok {
		return nil
	}
	t := reflect.TypeOf(mk())
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var out []Param
	goNames := map[string]string{} // Go field name -> YAML name, for the docs
	collectParams(t, "", &out, goNames)
	for i := range out {
		out[i].Doc = renameFields(out[i].Doc, goNames)
		if m := defaultRE.FindStringSubmatch(out[i].Doc); m != nil {
			out[i].Default = renameFields(m[1], goNames)
			if v, ok := namedDefaults[m[1]]; ok {
				out[i].Default = v()
			}
		} else if m := defaultChoiceRE.FindStringSubmatch(out[i].Doc); m != nil {
			out[i].Default = m[1]
		} else if out[i].Type == "bool" {
			out[i].Default = "false"
		}
	}
	return out
}

var durationType = reflect.TypeOf(time.Duration(0))

// namedDefaults writes, as a scenario file would, the defaults a doc
// names by their variable.
var namedDefaults = map[string]func() string{
	"DefaultHopTargets": func() string {
		var items []string
		for _, h := range DefaultHopTargets {
			items = append(items, fmt.Sprintf("{kind: %v, rate: %g}", h.Kind, h.Rate))
		}
		return "[" + strings.Join(items, ", ") + "]"
	},
}

func collectParams(t reflect.Type, prefix string, out *[]Param, goNames map[string]string) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("yaml")
		if tag == "-" || !f.IsExported() {
			continue
		}
		yname, opts, _ := strings.Cut(tag, ",")
		if opts == "inline" {
			collectParams(f.Type, prefix, out, goNames)
			continue
		}
		if yname == "" {
			yname = strings.ToLower(f.Name)
		}
		full := prefix + yname
		if _, seen := goNames[f.Name]; !seen {
			goNames[f.Name] = full
		}
		doc := fieldDocs[t.Name()+"."+f.Name]
		doc = strings.TrimPrefix(doc, f.Name+": ")
		*out = append(*out, Param{Name: full, Type: paramType(f.Type), Doc: doc})
		switch {
		case f.Type.Kind() == reflect.Struct && f.Type != durationType:
			collectParams(f.Type, full+".", out, goNames)
		case f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() == reflect.Struct:
			collectParams(f.Type.Elem(), full+"[].", out, goNames)
		}
	}
}

func paramType(t reflect.Type) string {
	switch {
	case t == durationType:
		return "duration"
	case t == reflect.TypeOf(Kind(0)):
		return "kind"
	}
	switch t.Kind() {
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.Bool:
		return "bool"
	case reflect.String:
		return "string"
	case reflect.Slice:
		return "list"
	case reflect.Struct:
		return "mapping"
	}
	return t.Kind().String()
}

var wordRE = regexp.MustCompile(`\b[A-Z][A-Za-z]+\b`)

// renameFields replaces the Go field names in text by their YAML names.
func renameFields(text string, goNames map[string]string) string {
	return wordRE.ReplaceAllStringFunc(text, func(w string) string {
		if y, ok := goNames[w]; ok {
			return y
		}
		return w
	})
}
