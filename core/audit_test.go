package core

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func findings(fs []Finding, kind, channel string) []Finding {
	var out []Finding
	for _, f := range fs {
		if f.Kind == kind && (channel == "" || f.Channel == channel) {
			out = append(out, f)
		}
	}
	return out
}

func TestAuditExamplePolicy(t *testing.T) {
	p, err := LoadPolicy("testdata/policy.yaml")
	require.NoError(t, err)
	fs := Audit(p)
	for _, f := range fs {
		assert.Less(t, f.Severity, SeverityWarning, "the example policy has no warnings: %v", f)
	}
	d := findings(fs, FindingDefaultRateLimit, "")
	require.Len(t, d, 1, "only aim leaves its rate out")
	assert.Equal(t, "aim", d[0].Channel)
	assert.Equal(t, SeverityInfo, d[0].Severity)
	assert.Equal(t, "channels[1].rate", d[0].Path)
	assert.Len(t, findings(fs, FindingIgnoredLimit, "snapshot"), 1)

	strict := AuditStrict(p)
	d = findings(strict, FindingDefaultRateLimit, "")
	require.Len(t, d, 1)
	assert.Equal(t, SeverityError, d[0].Severity, "strict mode: a client-to-server channel needs an explicit rate")
	assert.Equal(t, SeverityError, strict[0].Severity, "errors come first")
}

func TestAuditFindings(t *testing.T) {
	base := func() Policy {
		return Policy{Channels: []Channel{{Name: "x", Class: ClassRequest, Rate: new(5.0), Burst: new(10.0)}}}
	}
	cases := []struct {
		name    string
		mut     func(p *Policy)
		kind    string
		sev     Severity
		channel string
	}{
		{"default rate", func(p *Policy) { p.Channels[0].Rate = nil }, FindingDefaultRateLimit, SeverityInfo, "x"},
		{"request without retry", func(p *Policy) { p.Channels[0].RetryAfter = new(false) }, FindingRequestWithoutRetry, SeverityWarning, "x"},
		{"retry on input", func(p *Policy) { p.Channels[0].Class = ClassInput; p.Channels[0].RetryAfter = new(true) }, FindingRetryNotSent, SeverityInfo, "x"},
		{"burst of one", func(p *Policy) { p.Channels[0].Burst = new(1.0) }, FindingBurstOfOne, SeverityWarning, "x"},
		{"cost above the account burst", func(p *Policy) {
			p.Channels[0].Cost = new(uint64(8))
			p.Account = Budget{Rate: new(10.0), Burst: new(5.0)}
		}, FindingUnreachable, SeverityError, "x"},
		{"cost above the match burst", func(p *Policy) {
			p.Channels[0].Cost = new(uint64(8))
			p.Match = Budget{Rate: new(10.0), Burst: new(5.0)}
		}, FindingUnreachable, SeverityWarning, "x"},
		{"minimum charge above the byte burst", func(p *Policy) {
			p.Transport.MinCharge = new(uint32(9000))
		}, FindingUnreachable, SeverityError, ""},
		{"minimum charge above the byte burst, no channels", func(p *Policy) {
			p.Channels = nil
			p.Transport.MinCharge = new(uint32(9000))
		}, FindingUnreachable, SeverityError, ""},
		{"channel burst above the account burst", func(p *Policy) {
			// 10 tokens at 4 a message: 2 messages at once, 8 tokens from
			// the account's 7, which holds 1 (a burst of 8 would hold
			// them: the cost is charged to both, not multiplied again).
			p.Channels[0].Cost = new(uint64(4))
			p.Account = Budget{Rate: new(100.0), Burst: new(7.0)}
		}, FindingBurstUnreachable, SeverityInfo, "x"},
		{"burst above the frame burst", func(p *Policy) { p.Channels[0].Burst = new(200.0) }, FindingBurstUnreachable, SeverityWarning, "x"},
		{"rate above the frame rate", func(p *Policy) { p.Channels[0].Rate = new(500.0); p.Channels[0].Burst = new(100.0) }, FindingRateUnreachable, SeverityWarning, "x"},
		{"channel rate above the account rate", func(p *Policy) {
			// 5 tokens/s at 2 a message: 2.5 messages/s, 5 tokens/s from
			// the account's 4 (a rate of 8 would keep up).
			p.Channels[0].Cost = new(uint64(2))
			p.Account = Budget{Rate: new(4.0), Burst: new(100.0)}
		}, FindingRateUnreachable, SeverityWarning, "x"},
		{"size above the byte burst", func(p *Policy) {
			p.Transport.Bytes = Budget{Rate: new(10_000.0), Burst: new(2_000.0)}
		}, FindingSizeUnreachable, SeverityWarning, "x"},
		{"size above the max frame", func(p *Policy) { p.Channels[0].MaxSize = new(uint32(9000)) }, FindingMaxSizeAboveFrame, SeverityInfo, "x"},
		{"request above the pending bytes", func(p *Policy) { p.Queue.PendingBytes = new(uint32(1000)) }, FindingUnreachable, SeverityWarning, "x"},
		{"in-flight above the queue", func(p *Policy) { p.Channels[0].InFlight = 40 }, FindingInFlightAboveQueue, SeverityInfo, "x"},
		{"limits on a server channel", func(p *Policy) { p.Channels[0].Direction = ServerToClient }, FindingIgnoredLimit, SeverityInfo, "x"},
		{"account layer off", func(p *Policy) { p.Account.Disabled = true }, FindingLayerDisabled, SeverityInfo, ""},
		{"byte budget off", func(p *Policy) { p.Transport.Bytes.Disabled = true }, FindingLayerDisabled, SeverityWarning, ""},
		{"tight address budget", func(p *Policy) { p.Address = Budget{Rate: new(1.0), Burst: new(3.0)} }, FindingTightAddressLimit, SeverityInfo, ""},
		{"channel drop disconnects", func(p *Policy) { p.Strikes.Weights = map[Reason]float64{ChannelLimit: 20} }, FindingStrikeWeight, SeverityWarning, ""},
		{"flood weighs like a channel drop", func(p *Policy) { p.Strikes.Weights = map[Reason]float64{ByteLimit: 1} }, FindingStrikeWeight, SeverityInfo, ""},
		{"strikes off", func(p *Policy) { p.Strikes.Disabled = true }, FindingStrikesDisabled, SeverityWarning, ""},
		{"shadow", func(p *Policy) { p.Shadow = true }, FindingShadowMode, SeverityWarning, ""},
		{"fail open", func(p *Policy) { p.Escalation.TableFull = "allow" }, FindingFailOpen, SeverityInfo, ""},
		{"no channels", func(p *Policy) { p.Channels = nil }, FindingNoChannels, SeverityInfo, ""},
		{"invalid", func(p *Policy) { p.Channels[0].Rate = new(-1.0) }, FindingInvalid, SeverityError, ""},
	}
	clean := Audit(base())
	for _, f := range clean {
		assert.Equal(t, SeverityInfo, f.Severity, "the base policy is clean: %v", f)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := base()
			tc.mut(&p)
			fs := Audit(p)
			got := findings(fs, tc.kind, tc.channel)
			require.NotEmpty(t, got, "%v", fs)
			var sev []Severity
			for _, f := range got {
				sev = append(sev, f.Severity)
				assert.NotEmpty(t, f.Message)
			}
			assert.Contains(t, sev, tc.sev)
			for i := 1; i < len(fs); i++ {
				assert.GreaterOrEqual(t, fs[i-1].Severity, fs[i].Severity, "sorted by severity")
			}
		})
	}
	inv := Audit(Policy{Channels: []Channel{{Name: "x", Class: ClassInput, Rate: new(-1.0)}}})
	require.Len(t, inv, 1)
	assert.Equal(t, "channels[0].rate", inv[0].Path)
}

// A minimum charge above the byte burst stops every read, whatever channel
// it carries: one finding for the transport, not one per channel, and none
// of the per-channel byte findings it makes moot.
func TestAuditMinChargeOnce(t *testing.T) {
	p := Policy{Channels: []Channel{
		{Name: "x", Class: ClassRequest, Rate: new(5.0), Burst: new(10.0)},
		{Name: "y", Class: ClassInput, Rate: new(5.0), Burst: new(10.0)},
	}}
	p.Transport.MinCharge = new(uint32(9000))
	var paths []string
	for _, f := range Audit(p) {
		if f.Kind == FindingUnreachable || f.Kind == FindingSizeUnreachable || f.Kind == FindingBurstUnreachable {
			paths = append(paths, f.Path)
		}
	}
	assert.Equal(t, []string{"transport.minCharge"}, paths)
}

// A channel's burst is in tokens and a message takes cost of them: a burst
// of 3 at cost 2 holds one message, so the second click of a double-click
// fails, as with a burst of 1 at cost 1. The gate agrees.
func TestAuditBurstOfOneCountsMessages(t *testing.T) {
	p := Policy{Channels: []Channel{{Name: "x", Class: ClassInput, Rate: new(5.0), Burst: new(3.0), Cost: new(uint64(2))}}}
	g := mustGate(t, p)
	s := mustOpen(t, g, addrA, 0)
	require.True(t, g.Check(Message{Session: s, Kind: 0, Size: 10}, 0).OK())
	require.Equal(t, ChannelLimit, g.Check(Message{Session: s, Kind: 0, Size: 10}, 0).Reason, "one message at once")
	assert.NotEmpty(t, findings(Audit(p), FindingBurstOfOne, "x"), "%v", Audit(p))
}

// A bucket passes whole messages: a burst of 10.5 tokens at cost 1 is 10
// messages at once, which a frame burst of 10 and an account burst of 10
// both hold. The gate passes all 10; the audit says nothing is out of reach.
func TestAuditBurstInWholeMessages(t *testing.T) {
	p := Policy{
		Channels:  []Channel{{Name: "x", Class: ClassInput, Rate: new(5.0), Burst: new(10.5), MaxSize: new(uint32(100))}},
		Transport: Transport{Frames: Budget{Rate: new(100.0), Burst: new(10.0)}, MinCharge: new(uint32(100))},
		Account:   Budget{Rate: new(100.0), Burst: new(10.0)},
	}
	g := mustGate(t, p)
	s := mustOpen(t, g, addrA, 0)
	mustAuth(t, g, s, 1, 0)
	for i := range 10 {
		require.True(t, g.Check(Message{Session: s, Kind: 0, Size: 100}, 0).OK(), "message %d", i)
	}
	require.False(t, g.Check(Message{Session: s, Kind: 0, Size: 100}, 0).OK())
	assert.Empty(t, findings(Audit(p), FindingBurstUnreachable, "x"), "the channel's 10 messages all pass")
}
