package scenarios

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/sluicedev/sluice/loadgen/record"
	"github.com/sluicedev/sluice/loadgen/wire"
	"github.com/sluicedev/sluice/reports"
)

// Every outcome a results file can carry as a drop reason (fillKind: the
// server's reasons and the client's drops; fillSessions: whatever ended a
// session, an unknown reason included) is one the reader knows, so sluice
// never writes a file it then refuses.
func TestEveryDropReasonWrittenIsKnown(t *testing.T) {
	known := reports.KnownReasons()
	for o := range record.Outcome(record.NumOutcomes) {
		if !o.Valid() || o == record.Accepted {
			continue
		}
		if o == record.NotSent {
			// Not a drop: reports count it in not_sent.
			assert.Equal(t, reports.NotSentReason, o.String())
			assert.False(t, slices.Contains(known, o.String()), "NotSent is counted apart, not as a drop reason")
			continue
		}
		if o.IsServerReason() || o.IsClientDrop() {
			assert.True(t, slices.Contains(known, o.String()), "%s is written as a drop reason but not known to reports", o)
		}
	}
	// The session row: how the server ended a session, from a refused
	// hello's reply (any status, any reason byte) or a Disconnect's reason.
	for st := range 256 {
		for reason := range 256 {
			if o := record.ReplyOutcome(wire.Status(st), uint8(reason)); o != record.Accepted {
				assert.True(t, slices.Contains(known, o.String()), "a session ended as %s, which reports does not know", o)
			}
		}
	}
	for reason := range 256 {
		o := record.ReasonOutcome(uint8(reason))
		assert.True(t, slices.Contains(known, o.String()), "a session ended as %s, which reports does not know", o)
	}
}
