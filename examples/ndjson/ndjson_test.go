package ndjson

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sluicedev/sluice/core"
	"github.com/sluicedev/sluice/loadgen/proto"
	"github.com/sluicedev/sluice/scenarios"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func init() { proto.Register(Protocol{}) }

// sluice's shipped flood scenario drives the example server over its own
// protocol: the honest players log in, are answered and keep their
// connections, and the floods are cut off, all as the clients saw it
// through the plug-in.
func TestFloodScenarioAgainstTheExampleServer(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a scenario for seconds over loopback sockets")
	}
	s, err := scenarios.Load("../../scenarios/flood-mix.yaml")
	require.NoError(t, err)
	vs, err := s.Policies()
	require.NoError(t, err)
	srv, err := NewServer(vs[0].Policy, "127.0.0.1:0")
	require.NoError(t, err)
	defer srv.Close()

	out, err := scenarios.Run(context.Background(), s, scenarios.Options{
		Target: srv.Addr().String(), Protocol: Name, Policy: vs[0].Name, Duration: 6 * time.Second,
	})
	require.NoError(t, err)
	v := out.Results.Variants[0]
	honest := v.Population("honest")
	require.NotNil(t, honest)
	assert.Equal(t, honest.Kind("hello").Sent, honest.Kind("hello").Accepted, "every honest hello answered ok")
	assert.Positive(t, honest.Kind("chat").Accepted, "honest chat answered")
	assert.Positive(t, honest.Kind("move").Unknown, "inputs written, their fate the server's")
	assert.Zero(t, honest.Summary.FalseDisconnects)
	for _, name := range []string{"tiny", "bytes"} {
		p := v.Population(name)
		require.NotNil(t, p, name)
		c := p.Summary.CutOff
		require.NotNil(t, c, name)
		assert.Positive(t, c.Of, name)
		assert.Equal(t, c.Of, c.Clients, "%s: every flooding client cut off", name)
		assert.Less(t, c.Max, 2*time.Second, name)
	}
}

// The plug-in's frames are what the server reads: a line each, JSON with
// the fields the package documents, and its reader decodes every kind of
// server line.
func TestProtocolFrames(t *testing.T) {
	var p Protocol
	ch := proto.Channel{Name: "chat", Code: 2}
	assert.Equal(t, `{"t":"hello","token":"42","label":"a\"b"}`+"\n", string(p.AppendHello(nil, []byte("42"), []byte(`a"b`))))
	assert.Equal(t, `{"t":"req","ch":"chat","id":7,"p":"000"}`+"\n", string(p.AppendRequest(nil, ch, 7, make([]byte, 3))))
	assert.Equal(t, `{"t":"input","ch":"chat","p":""}`+"\n", string(p.AppendInput(nil, ch, nil)))
	assert.Equal(t, `{"t":"ping","id":9}`+"\n", string(p.AppendPing(nil, 9)))

	in := `{"t":"reply","id":7,"status":"ok"}
{"t":"reply","id":8,"status":"rejected","reason":"ChannelLimit","retry_ns":500000000}
{"t":"pong","id":9}
{"t":"bye","reason":"Lockout"}
{"t":"what"}
`
	r := p.NewReader(stringsReader(in))
	var f proto.Frame
	require.NoError(t, r.Next(&f))
	assert.Equal(t, proto.Frame{Kind: proto.Reply, ID: 7, Status: proto.OK}, f)
	require.NoError(t, r.Next(&f))
	assert.Equal(t, proto.Frame{Kind: proto.Reply, ID: 8, Status: proto.Rejected, Reason: 1, RetryAfter: 5e8}, f)
	require.NoError(t, r.Next(&f))
	assert.Equal(t, proto.Frame{Kind: proto.Pong, ID: 9, Timestamp: 9}, f)
	require.NoError(t, r.Next(&f))
	assert.Equal(t, proto.Disconnect, f.Kind)
	assert.Equal(t, uint8(core.Lockout), f.Reason)
	assert.ErrorIs(t, r.Next(&f), errLine)
}

func stringsReader(s string) *strings.Reader { return strings.NewReader(s) }
