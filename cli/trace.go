package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sluicedev/sluice/trace"
)

func newTraceCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "trace",
		Short: "Inspect and convert recorded traffic traces",
		Long: `trace works on the trace files that sluice serve --record and sluice run
--record write, and that a scenario replays with behaviour: trace (see
docs/traces.md and the trace package's documentation for the format).`,
		Args: args(cobra.NoArgs),
	}
	c.AddCommand(newTraceInspectCmd(), newTraceConvertCmd())
	return c
}

func newTraceInspectCmd() *cobra.Command {
	var partial bool
	c := &cobra.Command{
		Use:   "inspect FILE",
		Short: "Summarize a trace: sessions, duration, kinds, rates, sizes, decisions, lost records",
		Long: `inspect reads a trace and prints its header, its sessions (by the group and
label its server gave them), its length, messages per kind, messages per
second over time, the size spectrum, the decisions the recording gate
made, the records its recorder lost, and the sessions that sent most.

A damaged trace (truncated, a corrupt block) is an error naming the byte
and record where the damage is; with --partial inspect reads up to the
damage (skipping a corrupt block it can step over) and says how much it
lost. Exit codes: 0 ok, 1 error, 2 usage.`,
		Example: `  sluice trace inspect scenarios/traces/quickstart.trace
  sluice trace inspect --partial damaged.trace`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, a []string) error {
			f, err := os.Open(a[0])
			if err != nil {
				return err
			}
			defer f.Close()
			r, err := trace.NewReader(f, trace.ReaderOptions{Partial: partial})
			if err != nil {
				return fmt.Errorf("%s: %w", a[0], err)
			}
			s, err := trace.Summarize(r)
			if err != nil {
				return fmt.Errorf("%s: %w (--partial reads up to the damage)", a[0], err)
			}
			s.WriteText(c.OutOrStdout(), r.Header())
			if d := r.Damage(); d != nil {
				fmt.Fprintf(c.OutOrStdout(), "\ndamaged: %s\n", d)
				for _, e := range d.Errs[1:] {
					fmt.Fprintf(c.OutOrStdout(), "  also: %v\n", e)
				}
			}
			return nil
		},
	}
	c.Flags().BoolVar(&partial, "partial", false, "read a damaged trace up to its damage and say what was lost")
	return c
}

func newTraceConvertCmd() *cobra.Command {
	var to, out string
	var partial bool
	c := &cobra.Command{
		Use:   "convert FILE",
		Short: "Convert a trace to or from JSON Lines",
		Long: `convert turns a binary trace into JSON Lines (--to jsonl) or JSON Lines into
a binary trace (--to trace), so that a studio can export its own server's
logs without writing Go. FILE "-" is standard input; the output goes to
--output (default standard output). The JSON Lines form is documented in
docs/traces.md; parsing is strict: an unknown field, a wrong type, a value
out of range or a record out of time order is an error naming the line
and the field, and nothing is written.

Exit codes: 0 ok, 1 error, 2 usage.`,
		Example: `  sluice trace convert --to jsonl scenarios/traces/quickstart.trace > qs.jsonl
  sluice trace convert --to trace -o studio.trace studio.jsonl`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, a []string) error {
			if to != "jsonl" && to != "trace" {
				return usageError{fmt.Errorf("--to %q: want jsonl or trace", to)}
			}
			var in io.Reader = c.InOrStdin()
			if a[0] != "-" {
				f, err := os.Open(a[0])
				if err != nil {
					return err
				}
				defer f.Close()
				in = f
			}
			return convertTrace(c.OutOrStdout(), c.ErrOrStderr(), in, a[0], out, to, partial)
		},
	}
	c.Flags().StringVar(&to, "to", "", "jsonl or trace (required)")
	c.Flags().StringVarP(&out, "output", "o", "", "output file (default standard output)")
	c.Flags().BoolVar(&partial, "partial", false, "convert a damaged binary trace up to its damage")
	return c
}

// convertTrace converts in (named name) and writes the result to the file
// out, or stdout, and a damaged trace's warning to stderr; a failed
// conversion leaves no output file.
func convertTrace(stdout, stderr io.Writer, in io.Reader, name, out, to string, partial bool) (err error) {
	w := stdout
	if out != "" {
		f, ferr := os.CreateTemp(dirOf(out), ".trace-convert-*")
		if ferr != nil {
			return ferr
		}
		// The deferred func reads the named result err: a failed
		// conversion removes the temporary file and leaves no output.
		defer func() {
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err == nil {
				err = os.Chmod(f.Name(), 0o644)
			}
			if err != nil {
				os.Remove(f.Name())
				return
			}
			err = os.Rename(f.Name(), out)
		}()
		w = f
	}
	if to == "jsonl" {
		r, err := trace.NewReader(in, trace.ReaderOptions{Partial: partial})
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if err := trace.WriteJSONL(w, r); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if d := r.Damage(); d != nil {
			fmt.Fprintf(stderr, "sluice: %s: damaged: %s\n", name, d)
		}
		return nil
	}
	tw, err := trace.ReadJSONL(in, func(h trace.Header) (*trace.Writer, error) { return trace.NewWriter(w, h) })
	if err != nil {
		var je *trace.JSONLError
		if errors.As(err, &je) {
			return fmt.Errorf("%s: %w", name, err)
		}
		return err
	}
	return tw.Close()
}

func dirOf(path string) string {
	if i := strings.LastIndexByte(path, '/'); i >= 0 {
		return path[:i+1]
	}
	return "."
}
