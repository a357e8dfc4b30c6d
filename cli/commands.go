package cli

import "github.com/spf13/cobra"

// addCommands registers the commands beyond version and validate.
func addCommands(root *cobra.Command) {
	root.AddCommand(newRunCmd(), newMergeCmd(), newReportCmd(), newAuditCmd(), newServeCmd(), newGateCmd(), newBenchCmd(), newBehavioursCmd(), newTraceCmd())
}
