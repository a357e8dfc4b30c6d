package reports

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func sampleServerView() *ServerView {
	return &ServerView{
		Window: ServerCounts{
			Messages:    map[string]map[string]int64{"move": {"None": 90, "ChannelLimit": 4}, "(transport)": {"None": 30}},
			Actions:     map[string]int64{"Accept": 120, "Drop": 4},
			Floods:      map[string]int64{"FrameLimit": 3},
			FloodsTotal: 3,
			Lockouts:    1,
		},
		Check: ServerCheck{Made: true, Agree: true, Rows: []ServerCheckRow{
			{Gate: "move", Server: "move", Reason: "None+QueueFull+Closed", GateCount: 100, Populations: 97, BeforeHello: 3, Compared: true},
			{Gate: "move", Server: "move", Reason: "ByteLimit", Populations: 6, Note: "per frame"},
		}},
	}
}

// A version 5 file (no server view) still reads; a file with a view round
// trips; a view whose agree flag says otherwise than its rows is refused.
func TestServerViewInResults(t *testing.T) {
	old, err := ReadFile("testdata/results-v5.json")
	require.NoError(t, err, "a version 5 file reads")
	assert.Equal(t, SchemaVersion, old.SchemaVersion)
	assert.Nil(t, old.Variants[0].Server)

	r := synthCopy(t, 1)

	r.Variants[0].Server = sampleServerView()
	b, err := Marshal(r)
	require.NoError(t, err)
	back, err := Unmarshal(b)
	require.NoError(t, err)
	assert.Equal(t, r.Variants[0].Server, back.Variants[0].Server)

	for name, breakIt := range map[string]func(s *ServerView){
		"agree with a disagreeing row": func(s *ServerView) { s.Check.Rows[0].Populations-- },
		"negative":                     func(s *ServerView) { s.Window.Messages["move"]["None"] = -1 },
		"not made without why":         func(s *ServerView) { s.Check = ServerCheck{} },
	} {
		s := sampleServerView()
		breakIt(s)
		r.Variants[0].Server = s
		_, err := Marshal(r)
		assert.True(t, errors.Is(err, ErrInvalid), "%s: %v", name, err)
		assert.ErrorContains(t, err, "server", name)
	}
}

// The report shows the gate's and the populations' counts side by side,
// and a disagreement as such, in the page and in the summary line.
func TestServerViewInReport(t *testing.T) {
	r := synthCopy(t, 1)
	v := r.Variants[0]
	v.Server = sampleServerView()
	html := renderHTML(t, r)
	has := func(s string) {
		t.Helper()
		assert.True(t, strings.Contains(html, s), "the page lacks %q", s)
	}
	has("<h3>The server's view</h3>")
	has("agree on all 1 comparable counts")
	// html/template writes + as &#43;.
	has("<td>None&#43;QueueFull&#43;Closed</td><td class=\"num\">100</td><td class=\"num\">97</td><td class=\"num\">3</td><td>yes</td>")
	has("not compared: per frame")
	assert.Contains(t, v.ServerViewNote(), "agree on all 1 comparable counts")

	v.Server.Check.Rows[0].Populations = 96
	v.Server.Check.Agree = false
	html = renderHTML(t, r)
	has("DISAGREE on 1 of 1 comparable counts")
	has("<strong>NO</strong>")
	assert.True(t, strings.HasPrefix(v.ServerViewNote(), "server view: DISAGREES on 1 of 1"), v.ServerViewNote())
}
