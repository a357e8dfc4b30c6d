package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sluicedev/sluice/reports"
	"github.com/spf13/cobra"
)

func newReportCmd() *cobra.Command {
	var out string
	c := &cobra.Command{
		Use:   "report RESULTS.json",
		Short: "Render report.html from a results file alone",
		Long: `report reads a results file written by 'sluice run' and writes the
self-contained HTML report (no network needed to view it). By default the
page goes beside the results file as report.html.

Exit codes: 0 written, 1 the results file cannot be read or is not valid,
or the page cannot be written, 2 usage.`,
		Example: `  sluice report results/quickstart/results.json
  sluice report results/quickstart/results.json -o /tmp/quickstart.html`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, a []string) error {
			r, err := reports.ReadFile(a[0])
			if err != nil {
				return err
			}
			if out == "" {
				out = filepath.Join(filepath.Dir(a[0]), reports.ReportFile)
			}
			if err := checkPagePath(out); err != nil {
				return err
			}
			if err := reports.WriteHTMLFile(out, r); err != nil {
				return err
			}
			w := c.OutOrStdout()
			if !r.Run.Complete {
				fmt.Fprintln(w, "run INCOMPLETE: the results cover only what was measured before it stopped")
			}
			for _, v := range r.Variants {
				fmt.Fprintf(w, "policy %s: %s%s\n", v.Name, v.Verdict(), variantNote(v))
			}
			fmt.Fprintf(w, "wrote %s\n", out)
			return nil
		},
	}
	c.Flags().StringVarP(&out, "output", "o", "", "where to write the page (default: report.html beside RESULTS)")
	return c
}

// variantNote is what report's line on v adds to its verdict: why it was
// expected to fail, and whether its run was cut short.
func variantNote(v *reports.Variant) string {
	var parts []string
	if n := v.ExpectNote(); n != "" {
		parts = append(parts, n)
	}
	if v.Incomplete() {
		parts = append(parts, fmt.Sprintf("incomplete: stopped %v into the run", v.Stopped.Round(time.Millisecond)))
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, "; ") + ")"
}

// checkPagePath says what to give instead when the page's path is a
// directory (a common slip: -o DIR); any other path the writer cannot use
// is named by its own error.
func checkPagePath(path string) error {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return fmt.Errorf("%s is a directory: give the page's file name, such as %s", path, filepath.Join(path, reports.ReportFile))
	}
	return nil
}
