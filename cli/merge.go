package cli

import (
	"fmt"
	"path/filepath"

	"github.com/sluicedev/sluice/reports"
	"github.com/sluicedev/sluice/scenarios"
	"github.com/spf13/cobra"
)

func newMergeCmd() *cobra.Command {
	var out string
	c := &cobra.Command{
		Use:   "merge RESULTS.json... -o DIR",
		Short: "Merge the results of a run's segments into the whole run's",
		Long: `merge reads the results.json of every segment of one run (sluice run
--segment I/N, one per load generator) and writes the whole run's: counts
summed, HDR histograms merged, time series summed interval by interval,
cut-off times pooled. It prints the summary, judges the scenario's
thresholds on the whole, and writes DIR/results.json, DIR/report.html and
DIR/hdr as sluice run does.

The files must be of one scenario file, seed, driver, duration and sluice
version, every segment 0 to N-1 of the same N exactly once; segments of a
loopback run must have been started with the same --start-at, so that
their time series line up. Anything else is refused, naming the file.

Exit codes: 0 every threshold held, 3 a threshold failed (or a variant
expected to fail passed, or the measurements are invalid), 1 a file
cannot be read or the segments do not make one run, 2 usage.`,
		Example: `  sluice merge seg0/results.json seg1/results.json seg2/results.json -o whole`,
		Args:    args(cobra.MinimumNArgs(1)),
		RunE: func(c *cobra.Command, files []string) error {
			if out == "" {
				return usageError{fmt.Errorf("-o DIR is required: where to write the merged results")}
			}
			rs := make([]*reports.Results, len(files))
			for i, f := range files {
				r, err := reports.ReadFile(f)
				if err != nil {
					return err
				}
				rs[i] = r
			}
			if err := checkOutput(out); err != nil {
				return err
			}
			o, err := scenarios.MergeSegments(rs, files)
			if err != nil {
				return err
			}
			w := c.OutOrStdout()
			fmt.Fprintf(w, "merged %d segments\n", len(files))
			printSummary(w, o.Results)
			if err := reports.RenderFiles(out, o.Results); err != nil {
				fmt.Fprintf(w, "\nthe results above were not written to %s\n", out)
				return err
			}
			fmt.Fprintf(w, "\nwrote %s (open %s)\n", filepath.Join(out, reports.ResultsFile), filepath.Join(out, reports.ReportFile))
			switch {
			case !o.Results.Run.Complete:
				fmt.Fprintln(w, "a segment's run was interrupted: the merged results are partial and marked incomplete")
				return withCode(exitInterrupted, nil)
			case len(o.Invalid) > 0:
				fmt.Fprintf(w, "measurements invalid for %v (see each variant's invalid notes in the report)\n", o.Invalid)
				return withCode(exitThresholds, nil)
			case !o.Passed:
				for _, name := range o.Unexpected {
					fmt.Fprintf(w, "policy %s: not as expected (thresholds)\n", name)
				}
				return withCode(exitThresholds, nil)
			}
			return nil
		},
	}
	c.Flags().StringVarP(&out, "output", "o", "", "directory for the merged results (required)")
	return c
}
