package cli

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/sluicedev/sluice/loadgen/behave"
	"github.com/spf13/cobra"
)

func newBehavioursCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "behaviours [NAME...]",
		Short: "List every behaviour a population can have, with its parameters and defaults",
		Long: `behaviours lists the behaviours a scenario's populations can have (the
behaviour: key) and, for each, the parameters its params: mapping takes, by
their YAML names, with their types, defaults and meaning. The listing is
read from the behaviours' own types and the comments on their fields, so
it is what the code does. With NAMEs, only those behaviours.

Exit codes: 0 ok, 2 usage (a NAME that is no behaviour).`,
		Example: `  sluice behaviours
  sluice behaviours honest laggy`,
		RunE: func(c *cobra.Command, a []string) error {
			names := behave.BehaviourNames()
			for _, n := range a {
				if !slices.Contains(names, n) {
					return usageError{fmt.Errorf("no behaviour named %q (have %s)", n, strings.Join(names, ", "))}
				}
			}
			if len(a) > 0 {
				names = a
			}
			return writeBehaviours(c.OutOrStdout(), names)
		},
	}
}

// writeBehaviours writes each behaviour of names with a table of its
// parameters.
func writeBehaviours(w io.Writer, names []string) error {
	for i, name := range names {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "%s\n", name)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  param\ttype\tdefault\tmeaning")
		for _, p := range behave.BehaviourParams(name) {
			def := p.Default
			if def == "" {
				def = "-"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", p.Name, p.Type, def, p.Doc)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}
