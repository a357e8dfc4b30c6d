package core

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/sluicedev/sluice/internal/suggest"
	"github.com/sluicedev/sluice/internal/valuekind"
	"github.com/sluicedev/sluice/internal/yamlerr"
)

// DecodePolicyYAML decodes a policy from YAML and validates it. Decoding
// walks the yaml.v3 node tree against the Policy type, so an unknown or
// repeated field, a value of the wrong type and every invalid limit is
// reported as a *PolicyError naming the field path and its line. The policy
// is returned as written (not normalized), with its source lines kept for
// later validation errors.
func DecodePolicyYAML(data []byte) (Policy, error) {
	doc, err := PolicyDocument(data)
	if err != nil {
		return Policy{}, err
	}
	if doc == nil {
		return Policy{}, &PolicyError{Msg: "empty document: the file holds no policy (write at least its channels)"}
	}
	return DecodePolicyNode(doc)
}

// PolicyDocument parses YAML policy text into the node of its document,
// refusing text that is not YAML or holds a second document with a
// *PolicyError. It returns nil for text with no document at all. A policy
// file is one document: a second would be silently ignored.
func PolicyDocument(data []byte) (*yaml.Node, error) {
	// Unknown fields are refused by the node walk (bind); KnownFields would
	// do nothing here, since the decoder only ever fills yaml.Nodes.
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		line, col, msg := yamlerr.Place(data, err)
		return nil, &PolicyError{Line: line, Col: col, Msg: msg, Err: err}
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case err == nil:
		return nil, &PolicyError{Line: extra.Line, Col: extra.Column, Msg: "more than one YAML document"}
	case !errors.Is(err, io.EOF):
		// A second document that does not even parse is still a second
		// document: refused, not ignored.
		return nil, &PolicyError{Line: yamlErrLine(err), Msg: "a second YAML document: " + err.Error(), Err: err}
	}
	return &doc, nil
}

// DecodePolicyJSON decodes a policy from JSON and validates it. Like
// DecodePolicyYAML it rejects unknown and repeated fields (the effect of
// json.Decoder.DisallowUnknownFields, with the path added) and names the
// field path and line of every error.
func DecodePolicyJSON(data []byte) (Policy, error) {
	n, err := parseJSONTree(data)
	if err != nil {
		return Policy{}, err
	}
	return decodePolicy(n)
}

// MaxPolicyFileBytes bounds a policy file LoadPolicy reads: a policy is a
// page a person writes, and one beyond a MiB is refused unread rather
// than decoded into memory.
const MaxPolicyFileBytes = 1 << 20

// LoadPolicy reads a policy file: .json is JSON, anything else YAML. A
// file over MaxPolicyFileBytes is refused.
func LoadPolicy(path string) (Policy, error) {
	f, err := os.Open(path)
	if err != nil {
		return Policy{}, fmt.Errorf("core: policy: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxPolicyFileBytes+1))
	if err != nil {
		return Policy{}, fmt.Errorf("core: policy: %w", err)
	}
	if len(data) > MaxPolicyFileBytes {
		return Policy{}, &PolicyError{Msg: fmt.Sprintf("the file is larger than %d bytes (1 MiB), the most a policy file may be", MaxPolicyFileBytes)}
	}
	if strings.EqualFold(filepath.Ext(path), ".json") {
		return DecodePolicyJSON(data)
	}
	return DecodePolicyYAML(data)
}

// decodePolicy binds n to a Policy and validates it.
func decodePolicy(n cfgNode) (Policy, error) {
	p, err := bindPolicy(n)
	if err != nil {
		return Policy{}, err
	}
	return p, p.Validate()
}

// bindPolicy binds n to a Policy, with the place of every field it sets,
// without validating the limits.
func bindPolicy(n cfgNode) (Policy, error) {
	p := Policy{lines: map[string]srcPos{}}
	err := bind(n, reflect.ValueOf(&p).Elem(), "", p.lines) // before p is returned: it fills p
	return p, err
}

var yamlLineRE = regexp.MustCompile(`line (\d+)`)

func yamlErrLine(err error) int {
	if m := yamlLineRE.FindStringSubmatch(err.Error()); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n
	}
	return 0
}

// cfgNode is one node of a decoded document, YAML or JSON, as the binder
// sees it.
type cfgNode interface {
	kind() cfgKind
	line() int
	col() int // 0 when not known
	pairs() ([]cfgPair, error)
	items() []cfgNode
	// text returns a scalar's text for a TextUnmarshaler, or an error if
	// the scalar is not a string.
	text() (string, error)
	// decode stores a scalar into a bool, number or string.
	decode(v any) error
}

type cfgKind uint8

const (
	kScalar cfgKind = iota
	kMap
	kSeq
	kNull
)

func (k cfgKind) String() string {
	return [...]string{"a scalar", "a mapping", "a sequence", "null"}[k]
}

type cfgPair struct {
	key       string
	line, col int
	val       cfgNode
}

// yamlNode adapts *yaml.Node.
type yamlNode struct{ n *yaml.Node }

func (y yamlNode) node() *yaml.Node {
	n := y.n
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

func (y yamlNode) kind() cfgKind {
	n := y.node()
	switch n.Kind {
	case yaml.MappingNode:
		return kMap
	case yaml.SequenceNode:
		return kSeq
	case yaml.ScalarNode:
		if n.ShortTag() == "!!null" {
			return kNull
		}
		return kScalar
	}
	return kNull
}

func (y yamlNode) line() int { return y.n.Line }

func (y yamlNode) col() int { return y.n.Column }

func (y yamlNode) pairs() ([]cfgPair, error) {
	n := y.node()
	out := make([]cfgPair, 0, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if k.Kind != yaml.ScalarNode {
			return nil, &PolicyError{Line: k.Line, Col: k.Column, Msg: "mapping key is not a scalar"}
		}
		if k.Value == "<<" { // merge keys hide where a value came from
			return nil, &PolicyError{Path: "<<", Line: k.Line, Col: k.Column, Msg: "merge keys (<<) are not supported: write the fields out"}
		}
		out = append(out, cfgPair{key: k.Value, line: k.Line, col: k.Column, val: yamlNode{n.Content[i+1]}})
	}
	return out, nil
}

func (y yamlNode) items() []cfgNode {
	n := y.node()
	out := make([]cfgNode, len(n.Content))
	for i, c := range n.Content {
		out[i] = yamlNode{c}
	}
	return out
}

func (y yamlNode) text() (string, error) {
	n := y.node()
	if t := n.ShortTag(); t != "!!str" && t != "!!int" && t != "!!float" && t != "!!bool" {
		return "", fmt.Errorf("want a string, got %s", t)
	}
	return n.Value, nil
}

func (y yamlNode) decode(v any) error { return valuekind.Decode(y.node(), v) }

// jsonNode is a JSON value with the line it starts on.
type jsonNode struct {
	k   cfgKind
	ln  int
	ps  []cfgPair
	its []cfgNode
	tok json.Token
}

func (j *jsonNode) kind() cfgKind             { return j.k }
func (j *jsonNode) line() int                 { return j.ln }
func (j *jsonNode) col() int                  { return 0 }
func (j *jsonNode) pairs() ([]cfgPair, error) { return j.ps, nil }
func (j *jsonNode) items() []cfgNode          { return j.its }

func (j *jsonNode) text() (string, error) {
	s, ok := j.tok.(string)
	if !ok {
		return "", fmt.Errorf("want a string, got %v", j.tok)
	}
	return s, nil
}

func (j *jsonNode) decode(v any) error {
	raw, err := json.Marshal(j.tok)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return notValid(string(raw), v) // raw is the value as written: "maybe", -1
		}
		return err
	}
	return nil
}

// parseJSONTree reads one JSON value into a tree of jsonNodes with lines.
func parseJSONTree(data []byte) (cfgNode, error) {
	lineStarts := []int{0}
	for i, c := range data {
		if c == '\n' {
			lineStarts = append(lineStarts, i+1)
		}
	}
	lineAt := func(off int64) int {
		// Skip separators to the token's first byte.
		for int(off) < len(data) {
			switch data[off] {
			case ' ', '\t', '\r', '\n', ':', ',':
				off++
				continue
			}
			break
		}
		return sort.Search(len(lineStarts), func(i int) bool { return int64(lineStarts[i]) > off })
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var parse func() (*jsonNode, error)
	parse = func() (*jsonNode, error) {
		ln := lineAt(dec.InputOffset())
		tok, err := dec.Token()
		if err != nil {
			return nil, jsonSyntaxErr(err, dec, lineAt)
		}
		n := &jsonNode{ln: ln, tok: tok}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{':
				n.k = kMap
				for dec.More() {
					kl := lineAt(dec.InputOffset())
					kt, err := dec.Token()
					if err != nil {
						return nil, jsonSyntaxErr(err, dec, lineAt)
					}
					key, _ := kt.(string)
					v, err := parse()
					if err != nil {
						return nil, err
					}
					n.ps = append(n.ps, cfgPair{key: key, line: kl, val: v})
				}
			case '[':
				n.k = kSeq
				for dec.More() {
					v, err := parse()
					if err != nil {
						return nil, err
					}
					n.its = append(n.its, v)
				}
			}
			if _, err := dec.Token(); err != nil { // closing delimiter
				return nil, jsonSyntaxErr(err, dec, lineAt)
			}
		case nil:
			n.k = kNull
		default:
			n.k = kScalar
		}
		return n, nil
	}
	root, err := parse()
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, &PolicyError{Line: lineAt(dec.InputOffset()), Msg: "data after the top-level value"}
	}
	return root, nil
}

func jsonSyntaxErr(err error, dec *json.Decoder, lineAt func(int64) int) error {
	off := dec.InputOffset()
	var se *json.SyntaxError
	if errors.As(err, &se) {
		off = se.Offset
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return &PolicyError{Line: lineAt(off), Msg: "unexpected end of JSON", Err: err}
	}
	return &PolicyError{Line: lineAt(off), Msg: err.Error(), Err: err}
}

var textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()

func joinPath(path, key string) string {
	switch {
	case path == "":
		return key
	case key == "":
		return path
	}
	return path + "." + key
}

// fieldIndex maps the yaml names of a struct's fields to their indexes.
func fieldIndex(t reflect.Type) map[string]int {
	m := map[string]int{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		m[name] = i
	}
	return m
}

// under puts a pairs error, whose path is relative to the mapping (the
// key, or none), under the mapping's path.
func under(err error, path string) error {
	if pe, ok := err.(*PolicyError); ok {
		pe.Path = joinPath(path, pe.Path)
	}
	return err
}

// bind stores node n into v, naming path in every error and recording the
// line of every path it visits.
func bind(n cfgNode, v reflect.Value, path string, lines map[string]srcPos) error {
	lines[path] = srcPos{n.line(), n.col()}
	fail := func(msg string, err error) error {
		return &PolicyError{Path: path, Line: n.line(), Col: n.col(), Msg: msg, Err: err}
	}
	if n.kind() == kNull {
		v.SetZero()
		return nil
	}
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		return bind(n, v.Elem(), path, lines)
	}
	if v.CanAddr() && v.Addr().Type().Implements(textUnmarshalerType) {
		if n.kind() != kScalar {
			return fail(fmt.Sprintf("want a string, got %s", n.kind()), nil)
		}
		s, err := n.text()
		if err == nil {
			err = v.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(s))
		}
		if err != nil {
			return fail(err.Error(), err)
		}
		return nil
	}
	switch v.Kind() {
	case reflect.Struct:
		if n.kind() != kMap {
			return fail(fmt.Sprintf("want a mapping, got %s", n.kind()), nil)
		}
		fields := fieldIndex(v.Type())
		ps, err := n.pairs()
		if err != nil {
			return under(err, path)
		}
		seen := map[string]bool{}
		for _, p := range ps {
			fp := joinPath(path, p.key)
			if seen[p.key] {
				return &PolicyError{Path: fp, Line: p.line, Col: p.col, Msg: "repeated field"}
			}
			seen[p.key] = true
			i, ok := fields[p.key]
			if !ok {
				return &PolicyError{Path: fp, Line: p.line, Col: p.col, Msg: fmt.Sprintf("unknown field %q in %s", p.key, v.Type().Name()),
					Suggestion: suggest.Closest(p.key, slices.Sorted(maps.Keys(fields)))}
			}
			if err := bind(p.val, v.Field(i), fp, lines); err != nil {
				return err
			}
		}
		return nil
	case reflect.Slice:
		if n.kind() != kSeq {
			return fail(fmt.Sprintf("want a sequence, got %s", n.kind()), nil)
		}
		items := n.items()
		s := reflect.MakeSlice(v.Type(), len(items), len(items))
		for i, it := range items {
			if err := bind(it, s.Index(i), fmt.Sprintf("%s[%d]", path, i), lines); err != nil {
				return err
			}
		}
		v.Set(s)
		return nil
	case reflect.Map:
		if n.kind() != kMap {
			return fail(fmt.Sprintf("want a mapping, got %s", n.kind()), nil)
		}
		ps, err := n.pairs()
		if err != nil {
			return under(err, path)
		}
		m := reflect.MakeMapWithSize(v.Type(), len(ps))
		for _, p := range ps {
			fp := joinPath(path, p.key)
			k := reflect.New(v.Type().Key())
			if tu, ok := k.Interface().(encoding.TextUnmarshaler); ok {
				if err := tu.UnmarshalText([]byte(p.key)); err != nil {
					return &PolicyError{Path: fp, Line: p.line, Col: p.col, Msg: err.Error(), Err: err}
				}
			} else if k.Elem().Kind() == reflect.String {
				k.Elem().SetString(p.key)
			} else {
				return &PolicyError{Path: fp, Line: p.line, Col: p.col, Msg: "unsupported key type"}
			}
			if m.MapIndex(k.Elem()).IsValid() {
				return &PolicyError{Path: fp, Line: p.line, Col: p.col, Msg: "repeated key"}
			}
			e := reflect.New(v.Type().Elem()).Elem()
			if err := bind(p.val, e, fp, lines); err != nil {
				return err
			}
			m.SetMapIndex(k.Elem(), e)
		}
		v.Set(m)
		return nil
	case reflect.Bool, reflect.String, reflect.Float32, reflect.Float64,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if n.kind() != kScalar {
			return fail(fmt.Sprintf("want %s, got %s", valuekind.Word(v.Type()), n.kind()), nil)
		}
		if err := n.decode(v.Addr().Interface()); err != nil {
			return fail(err.Error(), err)
		}
		return nil
	}
	return fail(fmt.Sprintf("unsupported type %s", v.Type()), nil)
}

// notValid is the error for a scalar, shown as written, that does not fit
// the value v points to: the one wording of YAML and JSON alike, and of
// scenario files.
func notValid(shown string, v any) error {
	return errors.New(valuekind.NotValid(shown, reflect.TypeOf(v).Elem()))
}
