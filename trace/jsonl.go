package trace

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/sluicedev/sluice/core"
)

// The JSON Lines form of a trace, for a studio that exports its own
// server's logs: the first line is the header, with the fields of the
// binary header and "trace": 1 (JSONLVersion, the version of this form,
// which does not change with the binary format's); then one record a
// line, in time order:
//
//	{"trace":1,"recorder":"my-server","origin":"2026-01-02T03:04:05Z","policy_digest":"","hashed":false}
//	{"op":"open","t":0,"session":1,"addr":"203.0.113.7:50123","action":"Accept","reason":"None"}
//	{"op":"auth","t":1500000,"session":1,"account":42,"action":"Accept","reason":"None"}
//	{"op":"label","t":1500000,"session":1,"label":"honest","group":"players"}
//	{"op":"read","t":2000000,"session":1,"size":40,"action":"Accept","reason":"None"}
//	{"op":"message","t":2000000,"session":1,"kind":"move","size":20,"flags":["charged"],"action":"Accept","reason":"None"}
//	{"op":"message","t":2100000,"session":1,"kind":"chat","size":44,"request":7,"action":"Reject","reason":"ChannelLimit"}
//	{"op":"done","t":2200000,"session":1,"request":7}
//	{"op":"close","t":9000000,"session":1}
//	{"op":"lost","t":9000000,"lost":12}
//
// "t" is ns since origin. Per op, these fields are allowed (those marked
// * required; the rest default to zero):
//
//	open       t* session addr or addr_hash (16 hex digits) action reason shadow
//	auth       t* session* account* action reason shadow
//	read       t* session* size* action reason shadow
//	message    t* session kind size* request match flags action reason shadow
//	unchecked  as message
//	done       t* session* request*
//	close      t* session*
//	label      t* session* label* group
//	lost       t* lost*
//
// action is Accept, Drop, Reject or Disconnect; reason a core.Reason name;
// flags a list of "malformed" and "charged"; label unknown, honest or
// hostile. Any other field, a field of the wrong type or out of range, or a
// record out of time order is an error naming the line and the field.

// JSONLError is a bad line of a JSON Lines trace.
type JSONLError struct {
	Line  int    // from 1
	Field string // "" for the line as a whole
	Msg   string
}

func (e *JSONLError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("trace: jsonl line %d: %s", e.Line, e.Msg)
	}
	return fmt.Sprintf("trace: jsonl line %d: field %q: %s", e.Line, e.Field, e.Msg)
}

type jsonHeader struct {
	Trace int `json:"trace"`
	Header
}

// WriteJSONL writes every record of r to w as JSON Lines.
func WriteJSONL(w io.Writer, r *Reader) error {
	bw := bufio.NewWriter(w)
	hb, err := json.Marshal(jsonHeader{Trace: JSONLVersion, Header: r.Header()})
	if err != nil {
		return err
	}
	bw.Write(hb)
	bw.WriteByte('\n')
	var b []byte
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		b = appendJSON(b[:0], rec)
		bw.Write(b)
	}
	return bw.Flush()
}

func appendJSON(b []byte, r *Record) []byte {
	b = append(b, `{"op":"`...)
	b = append(b, r.Op.String()...)
	b = append(b, `","t":`...)
	b = strconv.AppendInt(b, r.Time, 10)
	num := func(name string, v uint64) {
		b = append(b, `,"`...)
		b = append(b, name...)
		b = append(b, `":`...)
		b = strconv.AppendUint(b, v, 10)
	}
	str := func(name, v string) {
		b = append(b, `,"`...)
		b = append(b, name...)
		b = append(b, `":`...)
		b = strconv.AppendQuote(b, v)
	}
	decision := func() {
		str("action", r.Decision.Action.String())
		str("reason", r.Decision.Reason.String())
		if r.Decision.Shadow {
			b = append(b, `,"shadow":true`...)
		}
	}
	if r.Op != OpLost {
		num("session", r.Session)
	}
	switch r.Op {
	case OpOpen:
		if r.AddrHash != 0 {
			str("addr_hash", fmt.Sprintf("%016x", r.AddrHash))
		} else if r.Addr.IsValid() {
			str("addr", r.Addr.String())
		}
		decision()
	case OpAuth:
		num("account", r.Account)
		decision()
	case OpRead:
		num("size", uint64(r.Size))
		decision()
	case OpMessage, OpUnchecked:
		if r.Kind != "" {
			str("kind", r.Kind)
		}
		num("size", uint64(r.Size))
		if r.Request != 0 {
			num("request", r.Request)
		}
		if r.Match != 0 {
			num("match", r.Match)
		}
		if r.Flags != 0 {
			b = append(b, `,"flags":[`...)
			sep := ""
			if r.Flags&core.FlagMalformed != 0 {
				b = append(b, `"malformed"`...)
				sep = ","
			}
			if r.Flags&core.FlagCharged != 0 {
				b = append(b, sep...)
				b = append(b, `"charged"`...)
			}
			b = append(b, ']')
		}
		decision()
	case OpDone:
		num("request", r.Request)
	case OpLabel:
		str("label", r.Label.String())
		if r.Group != "" {
			str("group", r.Group)
		}
	case OpLost:
		num("lost", r.Lost)
	}
	return append(b, "}\n"...)
}

// fields allowed per op, the required ones first, with how many are required.
var jsonFields = map[Op]struct {
	names    []string
	required int
}{
	OpOpen:      {[]string{"op", "t", "session", "addr", "addr_hash", "action", "reason", "shadow"}, 2},
	OpAuth:      {[]string{"op", "t", "session", "account", "action", "reason", "shadow"}, 4},
	OpRead:      {[]string{"op", "t", "session", "size", "action", "reason", "shadow"}, 4},
	OpMessage:   {[]string{"op", "t", "size", "session", "kind", "request", "match", "flags", "action", "reason", "shadow"}, 3},
	OpUnchecked: {[]string{"op", "t", "size", "session", "kind", "request", "match", "flags", "action", "reason", "shadow"}, 3},
	OpDone:      {[]string{"op", "t", "session", "request"}, 4},
	OpClose:     {[]string{"op", "t", "session"}, 3},
	OpLabel:     {[]string{"op", "t", "session", "label", "group"}, 4},
	OpLost:      {[]string{"op", "t", "lost"}, 3},
}

// ReadJSONL reads a JSON Lines trace from r and writes it to w (a Writer
// made with the header ReadJSONL hands to mk). Nothing is written for a
// file with a bad header; a bad record stops it with a *JSONLError.
func ReadJSONL(r io.Reader, mk func(Header) (*Writer, error)) (*Writer, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	line := 0
	var w *Writer
	var prev int64
	for sc.Scan() {
		line++
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		if w == nil {
			h, err := parseJSONHeader(text, line)
			if err != nil {
				return nil, err
			}
			if w, err = mk(h); err != nil {
				return nil, err
			}
			continue
		}
		rec, err := parseJSONRecord(text, line)
		if err != nil {
			return w, err
		}
		if rec.Time < prev {
			return w, &JSONLError{line, "t", fmt.Sprintf("%d is before the previous record's %d: records must be in time order", rec.Time, prev)}
		}
		prev = rec.Time
		if err := w.Write(&rec); err != nil {
			return w, &JSONLError{line, "", err.Error()}
		}
	}
	if err := sc.Err(); err != nil {
		return w, &JSONLError{line + 1, "", err.Error()}
	}
	if w == nil {
		return nil, &JSONLError{1, "", "no header line"}
	}
	return w, nil
}

func strictFields(text []byte, line int) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	d := json.NewDecoder(bytes.NewReader(text))
	if err := d.Decode(&m); err != nil {
		return nil, &JSONLError{line, "", "not a JSON object: " + err.Error()}
	}
	if d.More() {
		return nil, &JSONLError{line, "", "more than one JSON value on the line"}
	}
	if m == nil {
		return nil, &JSONLError{line, "", "not a JSON object"}
	}
	return m, nil
}

func parseJSONHeader(text []byte, line int) (Header, error) {
	m, err := strictFields(text, line)
	if err != nil {
		return Header{}, err
	}
	var h Header
	for k, v := range m {
		var err error
		switch k {
		case "trace":
			var n int
			if err = json.Unmarshal(v, &n); err == nil && n != JSONLVersion {
				return h, &JSONLError{line, k, fmt.Sprintf("version %d; this reader reads version %d", n, JSONLVersion)}
			}
		case "recorder":
			err = json.Unmarshal(v, &h.Recorder)
		case "origin":
			var s string
			if err = json.Unmarshal(v, &s); err == nil {
				h.Origin, err = time.Parse(time.RFC3339Nano, s)
			}
		case "policy_digest":
			err = json.Unmarshal(v, &h.PolicyDigest)
		case "hashed":
			err = json.Unmarshal(v, &h.Hashed)
		case "note":
			err = json.Unmarshal(v, &h.Note)
		default:
			return h, &JSONLError{line, k, "is not a header field (trace, recorder, origin, policy_digest, hashed, note)"}
		}
		if err != nil {
			return h, &JSONLError{line, k, err.Error()}
		}
	}
	if _, ok := m["trace"]; !ok {
		return h, &JSONLError{line, "trace", "missing: the first line must be the header, with \"trace\": 1"}
	}
	return h, nil
}

func parseJSONRecord(text []byte, line int) (Record, error) {
	var rec Record
	m, err := strictFields(text, line)
	if err != nil {
		return rec, err
	}
	var opName string
	if v, ok := m["op"]; !ok {
		return rec, &JSONLError{line, "op", "missing"}
	} else if err := json.Unmarshal(v, &opName); err != nil {
		return rec, &JSONLError{line, "op", err.Error()}
	}
	op, ok := ParseOp(opName)
	if !ok {
		return rec, &JSONLError{line, "op", fmt.Sprintf("%q is not an op (open, auth, read, message, unchecked, done, close, label, lost)", opName)}
	}
	rec.Op = op
	spec := jsonFields[op]
	for k := range m {
		allowed := false
		for _, n := range spec.names {
			allowed = allowed || n == k
		}
		if !allowed {
			return rec, &JSONLError{line, k, fmt.Sprintf("is not a field of a %s record (%s)", op, strings.Join(spec.names, ", "))}
		}
	}
	for _, n := range spec.names[:spec.required] {
		if _, ok := m[n]; !ok {
			return rec, &JSONLError{line, n, fmt.Sprintf("missing: a %s record needs %s", op, strings.Join(spec.names[:spec.required], ", "))}
		}
	}
	for k, v := range m {
		if err := setJSONField(&rec, k, v); err != nil {
			return rec, &JSONLError{line, k, err.Error()}
		}
	}
	if rec.Op == OpOpen && rec.Addr.IsValid() && rec.AddrHash != 0 {
		return rec, &JSONLError{line, "addr_hash", "an open has addr or addr_hash, not both"}
	}
	return rec, nil
}

func setJSONField(r *Record, k string, v json.RawMessage) error {
	u64 := func(dst *uint64) error {
		var n uint64
		if err := json.Unmarshal(v, &n); err != nil {
			return fmt.Errorf("want an unsigned integer, got %s", v)
		}
		*dst = n
		return nil
	}
	str := func() (string, error) {
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return "", fmt.Errorf("want a string, got %s", v)
		}
		return s, nil
	}
	switch k {
	case "op":
		return nil
	case "t":
		var n int64
		if err := json.Unmarshal(v, &n); err != nil || n < 0 {
			return fmt.Errorf("want ns since origin (an integer ≥ 0), got %s", v)
		}
		r.Time = n
	case "session":
		return u64(&r.Session)
	case "account":
		return u64(&r.Account)
	case "request":
		return u64(&r.Request)
	case "match":
		return u64(&r.Match)
	case "lost":
		return u64(&r.Lost)
	case "size":
		var n uint64
		if err := u64(&n); err != nil {
			return err
		}
		if n > 1<<32-1 {
			return fmt.Errorf("%d is over 2³²−1", n)
		}
		r.Size = uint32(n)
	case "addr":
		s, err := str()
		if err != nil {
			return err
		}
		a, err := netip.ParseAddrPort(s)
		if err != nil {
			return fmt.Errorf("want an address and port (203.0.113.7:50123, [2001:db8::1]:443): %v", err)
		}
		r.Addr = a
	case "addr_hash":
		s, err := str()
		if err != nil {
			return err
		}
		n, err := strconv.ParseUint(s, 16, 64)
		if err != nil || len(s) != 16 || n == 0 {
			return fmt.Errorf("want 16 hex digits, not all zero, got %q", s)
		}
		r.AddrHash = n
	case "kind":
		s, err := str()
		if err != nil {
			return err
		}
		if !validKindName(s) {
			return fmt.Errorf("%q is not a kind name (1 to 64 letters, digits, '_', '-', '.')", s)
		}
		r.Kind = s
	case "flags":
		var fs []string
		if err := json.Unmarshal(v, &fs); err != nil {
			return fmt.Errorf("want a list of strings, got %s", v)
		}
		for _, f := range fs {
			switch f {
			case "malformed":
				r.Flags |= core.FlagMalformed
			case "charged":
				r.Flags |= core.FlagCharged
			default:
				return fmt.Errorf("%q is not a flag (malformed, charged)", f)
			}
		}
	case "action":
		s, err := str()
		if err != nil {
			return err
		}
		a, ok := parseAction(s)
		if !ok {
			return fmt.Errorf("%q is not an action (Accept, Drop, Reject, Disconnect)", s)
		}
		r.Decision.Action = a
	case "reason":
		s, err := str()
		if err != nil {
			return err
		}
		reason, err := core.ParseReason(s)
		if err != nil {
			return err
		}
		r.Decision.Reason = reason
	case "shadow":
		if err := json.Unmarshal(v, &r.Decision.Shadow); err != nil {
			return fmt.Errorf("want true or false, got %s", v)
		}
	case "label":
		s, err := str()
		if err != nil {
			return err
		}
		l, ok := ParseLabel(s)
		if !ok {
			return fmt.Errorf("%q is not a label (unknown, honest, hostile)", s)
		}
		r.Label = l
	case "group":
		s, err := str()
		if err != nil {
			return err
		}
		if len(s) > maxString {
			return fmt.Errorf("%d bytes, over %d", len(s), maxString)
		}
		r.Group = s
	}
	return nil
}

func parseAction(s string) (core.Action, bool) {
	for a := core.Accept; a <= core.Disconnect; a++ {
		if a.String() == s {
			return a, true
		}
	}
	return 0, false
}
