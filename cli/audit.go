package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/sluicedev/sluice/core"
	"github.com/sluicedev/sluice/internal/suggest"
	"github.com/sluicedev/sluice/scenarios"
	"github.com/spf13/cobra"
)

func newAuditCmd() *cobra.Command {
	var policyFile string
	var strict, asJSON bool
	c := &cobra.Command{
		Use:   "audit --policy FILE",
		Short: "Review a policy for limits that validate but will not do what they suggest",
		Long: `audit reads a policy (YAML, or JSON when the file ends in .json) and lists
findings: channels left at the default rate, request channels without retry
guidance, budgets that make a channel unreachable, lopsided strike weights,
layers turned off. With --strict, a client-to-server channel without an
explicit rate is an error, for CI.

Exit codes: 0 no error findings, 3 at least one error finding, 1 the file
could not be read or is not a valid policy (the error names the field and
line), 2 usage.`,
		Example: `  sluice audit --policy scenarios/policies/game.yaml
  sluice audit --strict --json --policy scenarios/policies/game.yaml`,
		Args: args(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			p, err := loadPolicyFlag(policyFile)
			if err != nil {
				return err
			}
			audit := core.Audit
			if strict {
				audit = core.AuditStrict
			}
			findings := audit(p)
			out := c.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				if findings == nil {
					findings = []core.Finding{}
				}
				if err := enc.Encode(findings); err != nil {
					return err
				}
			} else {
				for _, f := range findings {
					fmt.Fprintln(out, f)
				}
				fmt.Fprintf(out, "%s: %s\n", policyFile, count(len(findings), "finding"))
			}
			for _, f := range findings {
				if f.Severity == core.SeverityError {
					return withCode(exitThresholds, nil)
				}
			}
			return nil
		},
	}
	c.Flags().StringVar(&policyFile, "policy", "", "policy file (YAML or JSON)")
	c.Flags().BoolVar(&strict, "strict", false, "a channel without an explicit rate is an error")
	c.Flags().BoolVar(&asJSON, "json", false, "print the findings as JSON")
	return c
}

// loadPolicyFlag loads the policy named by a required --policy flag.
func loadPolicyFlag(path string) (core.Policy, error) {
	if path == "" {
		return core.Policy{}, usageError{errors.New("--policy FILE is required")}
	}
	return loadPolicyFile(path)
}

// loadPolicyFile decodes a policy file (JSON by extension, else YAML) and
// names the file in any error.
func loadPolicyFile(path string) (core.Policy, error) {
	p, err := core.LoadPolicy(path)
	if err != nil {
		return p, policyFileError(path, err)
	}
	return p, nil
}

// policyFileError words core's error about the policy file path as a
// scenario's is worded: each problem as path:line:col: field: why, with
// no package prefix (core joins every problem it finds).
func policyFileError(path string, err error) error {
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		if _, one := err.(*core.PolicyError); !one {
			var each []error
			for _, e := range joined.Unwrap() {
				each = append(each, policyFileError(path, e))
			}
			return errors.Join(each...)
		}
	}
	var pe *core.PolicyError
	if !errors.As(err, &pe) {
		// A file that could not be read: the error names it already.
		return errors.New(strings.TrimPrefix(err.Error(), "core: policy: "))
	}
	if pe.Line == 0 {
		where := path
		if pe.Path != "" {
			where += ": " + pe.Path
		}
		return fmt.Errorf("%s: %s%s", where, pe.Msg, suggest.Hint(pe.Suggestion))
	}
	return &scenarios.FieldError{File: path, Line: pe.Line, Col: pe.Col, Path: pe.Path, Msg: pe.Msg, Suggestion: pe.Suggestion}
}
