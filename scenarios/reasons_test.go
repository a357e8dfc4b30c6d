package scenarios

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/sluicedev/sluice/loadgen"
	"github.com/sluicedev/sluice/reports"
)

// Every outcome a results file can carry as a drop reason (fillKind: the
// server's reasons and the client's drops; fillSessions: whatever ended a
// session, an unknown reason included) is one the reader knows, so sluice
// never writes a file it then refuses.
func TestEveryDropReasonWrittenIsKnown(t *testing.T) {
	known := reports.KnownReasons()
	for o := range loadgen.Outcome(loadgen.NumOutcomes) {
		if !o.Valid() || o == loadgen.Accepted {
			continue
		}
		if o.IsServerReason() || o.IsClientDrop() || o == loadgen.UnknownReason {
			assert.True(t, slices.Contains(known, o.String()), "%s is written as a drop reason but not known to reports", o)
		}
	}
}
