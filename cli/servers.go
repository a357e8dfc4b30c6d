package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/sluicedev/sluice/reports"
)

// printServers writes, for a variant run on several game servers, what
// each admitted per second and the fleet-wide total, per population.
func printServers(w io.Writer, run *reports.Run, v *reports.Variant) {
	fleet := v.FleetAdmitted()
	secs := v.Measured(run).Seconds()
	if fleet == nil || secs <= 0 {
		return
	}
	fmt.Fprintf(w, "  admitted/s by game server (inputs and requests):\n")
	for _, p := range sortedPops(v.Populations) {
		total, ok := fleet[p.Name]
		if !ok {
			continue
		}
		var parts []string
		for _, s := range v.Servers {
			parts = append(parts, fmt.Sprintf("%s %.1f", s.Name, float64(s.Admitted[p.Name])/secs))
		}
		fmt.Fprintf(w, "    %s: %s; fleet-wide %.1f\n", p.Name, strings.Join(parts, ", "), float64(total)/secs)
	}
}
