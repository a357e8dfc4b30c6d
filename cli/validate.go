package cli

import (
	"fmt"

	"github.com/sluicedev/sluice/scenarios"
	"github.com/spf13/cobra"
)

func newValidateCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "validate FILE",
		Short: "Check a scenario file without running it",
		Long: `validate parses a scenario file strictly and reports the first problem with
file:line:column, the field path and, for a misspelt key, a suggestion. It
also builds every policy variant and checks each against the load
generator's own bounds (the time series' size, client counts, the channels
the behaviours send on), so a bad limit or a run the harness would refuse
is caught here, not at run time.

Exit codes: 0 valid, 1 the file is not a valid scenario (or cannot be
read), 2 usage.`,
		Example: `  sluice validate scenarios/quickstart.yaml`,
		Args:    args(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, a []string) error {
			s, err := scenarios.Load(a[0])
			if err != nil {
				return err
			}
			variants, err := s.Check(scenarios.Options{})
			if err != nil {
				return err
			}
			fmt.Fprintf(c.OutOrStdout(), "%s: ok (%s, %s, %s)\n",
				a[0], count(len(s.Population), "population"), count(len(variants), "policy variant"), count(len(s.Thresholds), "threshold"))
			return nil
		},
	}
}
