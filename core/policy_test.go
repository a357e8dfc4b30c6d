package core

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicedev/sluice/atomicbucket"
)

func TestPolicyExampleFile(t *testing.T) {
	p, err := LoadPolicy("testdata/policy.yaml")
	require.NoError(t, err)
	require.Len(t, p.Channels, 6)

	move := p.Channels[0]
	assert.Equal(t, "move", move.Name)
	assert.Equal(t, ClassInput, move.Class)
	assert.Equal(t, 60.0, *move.Rate)
	assert.Equal(t, 90.0, *move.Burst)
	buy := p.Channels[p.ChannelIndex("purchase")]
	assert.Equal(t, ClassRequest, buy.Class)
	assert.Equal(t, uint64(2), *buy.Cost)
	assert.Equal(t, uint32(1), buy.InFlight)
	assert.Equal(t, ServerToClient, p.Channels[5].Direction)
	assert.Equal(t, Duration(2*time.Minute), *p.Strikes.Lockout)
	assert.Equal(t, 6.0, p.Strikes.Weights[Malformed])
	assert.Equal(t, 6.0, p.Strikes.StrikeWeight(Malformed))
	assert.Equal(t, 1.0, p.Strikes.StrikeWeight(Duplicate), "unlisted reasons keep their default weight")
	assert.Equal(t, "deny", p.Escalation.TableFull)
	assert.Equal(t, 4, p.Line("channels[0].rate")-p.Line("channels[0]")+2, "lines are recorded per path")

	// aim leaves its rate out: the default, remembered as defaulted.
	aim := p.Channels[1]
	assert.Nil(t, aim.Rate, "decoding keeps the policy as written")
	q := p.clone()
	q.Normalize()
	assert.True(t, q.Channels[1].RateDefaulted)
	assert.True(t, q.Channels[1].BurstDefaulted)
	assert.Equal(t, 30.0, *q.Channels[1].Rate)
	assert.Equal(t, 30.0, *q.Channels[1].Burst)
	assert.False(t, q.Channels[0].RateDefaulted)

	g, err := NewGate(p, 0)
	require.NoError(t, err)
	assert.Len(t, g.chans, 6)
	assert.Nil(t, p.Channels[1].Rate, "NewGate normalizes its own copy")
}

// The same policy in JSON decodes to the same value, and also decodes with
// encoding/json's own strict decoder, so the JSON tags are the schema.
func TestPolicyJSONMatchesYAML(t *testing.T) {
	p, err := LoadPolicy("testdata/policy.yaml")
	require.NoError(t, err)
	js, err := json.MarshalIndent(p, "", "  ")
	require.NoError(t, err)

	q, err := DecodePolicyJSON(js)
	require.NoError(t, err)
	p.lines, q.lines = nil, nil
	assert.Equal(t, p, q)

	var std Policy
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&std))
	assert.Equal(t, p, std)

	path := t.TempDir() + "/policy.json"
	require.NoError(t, os.WriteFile(path, js, 0o600))
	r, err := LoadPolicy(path)
	require.NoError(t, err)
	r.lines = nil
	assert.Equal(t, p, r)
}

func TestPolicyDefaults(t *testing.T) {
	var p Policy
	p.Channels = []Channel{
		{Name: "a", Class: ClassInput},
		{Name: "b", Class: ClassRequest, Rate: new(2.5)},
		{Name: "c", Class: ClassPredicted, Rate: new(0.5)},
	}
	p.Normalize()
	a, b, c := p.Channels[0], p.Channels[1], p.Channels[2]
	assert.Equal(t, 30.0, *a.Rate)
	assert.Equal(t, 30.0, *a.Burst, "burst defaults to max(1, ceil(rate))")
	assert.True(t, a.RateDefaulted && a.BurstDefaulted)
	assert.Equal(t, 3.0, *b.Burst)
	assert.False(t, b.RateDefaulted)
	assert.True(t, b.BurstDefaulted)
	assert.True(t, *b.RetryAfter, "requests carry retry guidance by default")
	assert.False(t, *a.RetryAfter)
	assert.Equal(t, 1.0, *c.Burst)
	assert.Equal(t, uint64(1), *a.Cost)

	tr := p.Transport
	assert.Equal(t, 480_000.0, *tr.Bytes.Rate, "8,000 bytes per 1/60 s")
	assert.Equal(t, 8_000.0, *tr.Bytes.Burst)
	assert.Equal(t, uint32(800), *tr.MinCharge)
	assert.Equal(t, 240.0, *tr.Frames.Rate)
	assert.Equal(t, 128.0, *tr.Frames.Burst)
	assert.Equal(t, uint32(4096), *tr.MaxFrame)
	assert.Equal(t, uint32(4096), *a.MaxSize, "channel max size defaults to the max frame")
	assert.True(t, tr.Bytes.RateDefaulted)
	assert.Equal(t, Duration(30*time.Second), *p.Strikes.Window)
	assert.Equal(t, 16.0, *p.Strikes.Ladder.Disconnect)

	// A budget with only a rate takes the default burst formula.
	var q Policy
	q.Account.Rate = new(7.5)
	q.Normalize()
	assert.Equal(t, 8.0, *q.Account.Burst)
	assert.False(t, q.Account.RateDefaulted)
	assert.True(t, q.Account.BurstDefaulted)

	require.NoError(t, p.Validate())
	p2 := p
	p2.Normalize() // idempotent
	assert.Equal(t, p, p2)
}

func policyErrs(t *testing.T, err error) []*PolicyError {
	t.Helper()
	require.Error(t, err)
	require.ErrorIs(t, err, ErrPolicy)
	var out []*PolicyError
	var walk func(error)
	walk = func(e error) {
		if pe, ok := e.(*PolicyError); ok {
			out = append(out, pe)
			return
		}
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, x := range j.Unwrap() {
				walk(x)
			}
		}
	}
	walk(err)
	require.NotEmpty(t, out, "%v", err)
	return out
}

func TestPolicyValidation(t *testing.T) {
	ch := func(mut func(c *Channel)) Policy {
		c := Channel{Name: "x", Class: ClassInput, Rate: new(10.0)}
		mut(&c)
		return Policy{Channels: []Channel{{Name: "ok", Class: ClassInput}, c}}
	}
	cases := []struct {
		name string
		p    Policy
		path string
		msg  string
		is   error
	}{
		{"rate zero", ch(func(c *Channel) { c.Rate = new(0.0) }), "channels[1].rate", "greater than 0", atomicbucket.ErrRate},
		{"rate negative", ch(func(c *Channel) { c.Rate = new(-1.0) }), "channels[1].rate", "greater than 0", atomicbucket.ErrRate},
		{"rate NaN", ch(func(c *Channel) { c.Rate = new(math.NaN()) }), "channels[1].rate", "finite", atomicbucket.ErrRate},
		{"rate Inf", ch(func(c *Channel) { c.Rate = new(math.Inf(1)) }), "channels[1].rate", "finite", atomicbucket.ErrRate},
		{"burst below 1", ch(func(c *Channel) { c.Burst = new(0.5) }), "channels[1].burst", "at least 1", atomicbucket.ErrBurst},
		{"burst Inf", ch(func(c *Channel) { c.Burst = new(math.Inf(1)) }), "channels[1].burst", "finite", atomicbucket.ErrBurst},
		{"cost above burst", ch(func(c *Channel) { c.Burst = new(3.0); c.Cost = new(uint64(4)) }), "channels[1].cost", "ever pass", nil},
		{"cost zero", ch(func(c *Channel) { c.Cost = new(uint64(0)) }), "channels[1].cost", "at least 1", nil},
		{"no class", ch(func(c *Channel) { c.Class = ClassUnset }), "channels[1].class", "required", nil},
		{"no name", ch(func(c *Channel) { c.Name = "" }), "channels[1].name", "required", nil},
		{"duplicate name", ch(func(c *Channel) { c.Name = "ok" }), "channels[1].name", "already", nil},
		{"in-flight on input", ch(func(c *Channel) { c.InFlight = 1 }), "channels[1].inFlight", "request", nil},
		{"byte burst", Policy{Transport: Transport{Bytes: Budget{Burst: new(0.0)}}}, "transport.bytes.burst", "at least 1", atomicbucket.ErrBurst},
		{"account rate", Policy{Account: Budget{Rate: new(-3.0)}}, "account.rate", "greater than 0", atomicbucket.ErrRate},
		{"ladder order", Policy{Strikes: Strikes{Ladder: Ladder{Shed: new(2.0)}}}, "strikes.ladder.shed", "greater than warn", nil},
		{"negative weight", Policy{Strikes: Strikes{Weights: map[Reason]float64{ByteLimit: -1}}}, "strikes.weights.ByteLimit", "at least 0", nil},
		{"huge weight", Policy{Strikes: Strikes{Weights: map[Reason]float64{ByteLimit: 1e300}}}, "strikes.weights.ByteLimit", "at most", nil},
		{"huge rung", Policy{Strikes: Strikes{Ladder: Ladder{Lockout: new(1e300)}}}, "strikes.ladder.lockout", "at most", nil},
		// Within the point bounds, but converted to drain time they would
		// overflow the ladder's int64 nanoseconds.
		{"weight over a long window", Policy{Strikes: Strikes{Window: new(Duration(365 * 24 * time.Hour)), Weights: map[Reason]float64{Malformed: 1e6}}}, "strikes.weights.Malformed", "to drain", nil},
		{"lockout over a low disconnect", Policy{Strikes: Strikes{Window: new(Duration(time.Hour)), Ladder: Ladder{Warn: new(1e-4), Shed: new(2e-4), Drop: new(5e-4), Disconnect: new(1e-3), Lockout: new(1e6)}}}, "strikes.ladder.lockout", "to drain", nil},
		{"table full mode", Policy{Escalation: Escalation{TableFull: "maybe"}}, "escalation.tableFull", "deny or allow", nil},
		{"sessions", Policy{Tables: Tables{Sessions: new(uint32(0))}}, "tables.sessions", "between", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			errs := policyErrs(t, tc.p.Validate())
			assert.Equal(t, tc.path, errs[0].Path)
			assert.Contains(t, errs[0].Msg, tc.msg)
			assert.Contains(t, errs[0].Error(), "core: policy: "+tc.path)
			if tc.is != nil {
				assert.ErrorIs(t, errs[0], tc.is)
			}
			_, err := NewGate(tc.p, 0)
			assert.ErrorIs(t, err, ErrPolicy, "NewGate refuses it too")
		})
	}
	// Every error is reported, not just the first.
	p := ch(func(c *Channel) { c.Rate = new(-1.0); c.Class = ClassUnset })
	assert.Len(t, policyErrs(t, p.Validate()), 2)
}

func TestPolicyDecodeErrors(t *testing.T) {
	cases := []struct {
		name string
		yaml string
		path string
		line int
		msg  string
	}{
		{"unknown channel field", "channels:\n  - name: a\n    class: input\n    rat: 5\n", "channels[0].rat", 4, "unknown field"},
		{"unknown top-level field", "channels: []\nshadows: true\n", "shadows", 2, "unknown field"},
		{"unknown nested field", "transport:\n  bytes:\n    rate: 10\n    brust: 5\n", "transport.bytes.brust", 4, "unknown field"},
		{"repeated field", "shadow: true\nshadow: false\n", "shadow", 2, "repeated"},
		{"wrong type", "channels:\n  - name: a\n    class: input\n    rate: fast\n", "channels[0].rate", 4, "fast"},
		{"bad class", "channels:\n  - name: a\n    class: urgent\n", "channels[0].class", 3, "unknown class"},
		{"bad duration", "strikes:\n  window: soon\n", "strikes.window", 2, "duration"},
		{"unknown reason", "strikes:\n  weights:\n    Spam: 3\n", "strikes.weights.Spam", 3, "unknown reason"},
		{"sequence expected", "channels:\n  name: a\n", "channels", 2, "sequence"},
		{"negative count", "queue:\n  commands: -1\n", "queue.commands", 2, "-1"},
		// Validation errors point at the line of the value.
		{"invalid rate", "channels:\n  - name: a\n    class: input\n    rate: -5\n", "channels[0].rate", 4, "greater than 0"},
		{"infinite rate", "channels:\n  - name: a\n    class: input\n    rate: .inf\n", "channels[0].rate", 4, "finite"},
		{"defaulted field points at its parent", "channels:\n  - name: a\n    class: input\n    rate: 1e-7\n", "channels[0].burst", 2, "fill time"},
		{"missing class", "channels:\n  - name: a\n    rate: 3\n", "channels[0].class", 2, "required"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodePolicyYAML([]byte(tc.yaml))
			errs := policyErrs(t, err)
			assert.Equal(t, tc.path, errs[0].Path)
			assert.Equal(t, tc.line, errs[0].Line, "%v", err)
			assert.Contains(t, errs[0].Msg, tc.msg)
			assert.Contains(t, err.Error(), tc.path)
		})
	}

	t.Run("syntax", func(t *testing.T) {
		_, err := DecodePolicyYAML([]byte("channels:\n  - name: a\n   class: [\n"))
		errs := policyErrs(t, err)
		assert.Positive(t, errs[0].Line)
	})
	t.Run("empty", func(t *testing.T) {
		_, err := DecodePolicyYAML(nil)
		assert.ErrorIs(t, err, ErrPolicy)
	})
}

func TestPolicyDecodeJSONErrors(t *testing.T) {
	cases := []struct {
		name string
		json string
		path string
		line int
		msg  string
	}{
		{"unknown field", "{\n  \"channels\": [\n    {\"name\": \"a\", \"class\": \"input\",\n     \"burts\": 3}\n  ]\n}", "channels[0].burts", 4, "unknown field"},
		{"wrong type", "{\"transport\": {\n  \"minCharge\": \"lots\"\n}}", "transport.minCharge", 2, "lots"},
		{"invalid limit", "{\"match\": {\"rate\": 0}}", "match.rate", 1, "greater than 0"},
		{"repeated", "{\"shadow\": true, \"shadow\": true}", "shadow", 1, "repeated"},
		{"class not a string", "{\"channels\": [{\"name\": \"a\", \"class\": 3}]}", "channels[0].class", 1, "string"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodePolicyJSON([]byte(tc.json))
			errs := policyErrs(t, err)
			assert.Equal(t, tc.path, errs[0].Path)
			assert.Equal(t, tc.line, errs[0].Line, "%v", err)
			assert.Contains(t, errs[0].Msg, tc.msg)
		})
	}
	t.Run("syntax", func(t *testing.T) {
		_, err := DecodePolicyJSON([]byte("{\n\"shadow\": tru\n}"))
		errs := policyErrs(t, err)
		assert.Equal(t, 2, errs[0].Line)
	})
	t.Run("trailing data", func(t *testing.T) {
		_, err := DecodePolicyJSON([]byte("{}\n{}"))
		assert.ErrorIs(t, err, ErrPolicy)
	})
	t.Run("truncated", func(t *testing.T) {
		_, err := DecodePolicyJSON([]byte("{\"channels\": ["))
		assert.ErrorIs(t, err, ErrPolicy)
	})
}

func TestPolicyErrorFormat(t *testing.T) {
	e := &PolicyError{Path: "channels[2].rate", Line: 7, Msg: "must be finite"}
	assert.Equal(t, "core: policy: channels[2].rate (line 7): must be finite", e.Error())
	assert.True(t, errors.Is(e, ErrPolicy))
	assert.True(t, strings.HasPrefix((&PolicyError{Msg: "x"}).Error(), "core: policy: (document)"))
}

func FuzzDecodePolicyYAML(f *testing.F) {
	data, err := os.ReadFile("testdata/policy.yaml")
	require.NoError(f, err)
	f.Add(data)
	f.Add([]byte("channels:\n  - {name: a, class: input, rate: 1e300, burst: 1e-300}\n"))
	f.Add([]byte("a: &x [*x]\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := DecodePolicyYAML(b)
		checkDecoded(t, p, err)
	})
}

func FuzzDecodePolicyJSON(f *testing.F) {
	f.Add([]byte(`{"channels":[{"name":"a","class":"request","rate":3}],"transport":{"maxFrame":100}}`))
	f.Add([]byte(`{"strikes":{"weights":{"ByteLimit":2}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := DecodePolicyJSON(b)
		checkDecoded(t, p, err)
	})
}

// checkDecoded is what every decoder owes its fuzzer: an error wraps
// ErrPolicy, and a policy it accepts is one NewGate builds.
func checkDecoded(t *testing.T, p Policy, err error) {
	t.Helper()
	if err != nil {
		if !errors.Is(err, ErrPolicy) {
			t.Fatalf("error not wrapping ErrPolicy: %v", err)
		}
		return
	}
	q := p.Normalized()
	// Valid, but too big to build thousands of times a second: a keyed
	// table allocates its bound up front, up to 2 GiB at 2^26 keys. The
	// bounds sit above the defaults, so default tables are still built.
	if *q.Tables.Sessions > 1<<12 || *q.Tables.Matches > 1<<16 ||
		*q.Tables.Accounts > 1<<17 || *q.Tables.Addresses > 1<<17 {
		return
	}
	if _, err := NewGate(p, 0); err != nil {
		t.Fatalf("decoded policy refused by NewGate: %v", err)
	}
}

func TestNormalizedLeavesTheOriginalAlone(t *testing.T) {
	p := Policy{Channels: []Channel{{Name: "move", Class: ClassInput}}}
	n := p.Normalized()
	require.NotNil(t, n.Channels[0].Rate)
	assert.True(t, n.Channels[0].RateDefaulted)
	assert.Nil(t, p.Channels[0].Rate, "the original's channel is untouched")
	assert.False(t, p.Channels[0].RateDefaulted)
}
