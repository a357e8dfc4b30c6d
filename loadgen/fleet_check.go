package loadgen

import (
	"fmt"
	"time"

	"github.com/sluicedev/sluice/loadgen/behave"
	"github.com/sluicedev/sluice/loadgen/drive"
)

// simServer is what RunSim drives: one Sim, or a fleetSim.
type simServer interface {
	drive.Driver
	Frames() int64
	Busy() time.Duration
}

// checkServers checks a spec's Servers and Redis.
func checkServers(s RunSpec) error {
	switch {
	case s.Servers < 0 || s.Servers > behave.MaxServers:
		return &behave.ParamError{Owner: "run", Field: "Servers", Value: s.Servers, Reason: fmt.Sprintf("must be in [1, %d]", behave.MaxServers)}
	case s.Servers > 1 && s.Remote != nil:
		return &behave.ParamError{Owner: "run", Field: "Servers", Value: s.Servers, Reason: "are started by the run: a Remote server is one"}
	case s.Servers > 1 && s.NoLimits:
		return &behave.ParamError{Owner: "run", Field: "Servers", Value: s.Servers, Reason: "compare limits: NoLimits has none"}
	case s.Redis != "" && s.Servers < 2:
		return &behave.ParamError{Owner: "run", Field: "Redis", Value: s.Redis, Reason: "is for a run of several servers"}
	}
	return nil
}
