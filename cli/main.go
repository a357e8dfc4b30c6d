// Package cli is the sluice command as a library: it runs scenario files
// against the sluice rate limiter, writes results and HTML reports, audits
// policies, serves the reference game server, and gates benchmark
// regressions. Command sluice (cmd/sluice) is Main and nothing else.
//
// A studio builds its own sluice, the way xk6 builds k6 with extensions: a
// main package that registers its protocol with proto.Register and calls
// Main, after which --protocol NAME selects it (examples/ndjson/cmd/sluice-ndjson):
//
//	func main() {
//		proto.Register(mygame.Protocol{})
//		os.Exit(cli.Main(os.Args[1:]))
//	}
//
// Main installs its own handlers for SIGINT and SIGTERM while a command
// runs, and a second interrupt during a run exits the process at once
// (code 4, partial results unwritten), so call it from a main function, as
// the last thing the program does.
//
// Exit codes:
//
//	0  success
//	1  error (bad file, failed run, I/O)
//	2  usage (unknown command or flag, a bad flag value, wrong arguments)
//	3  the run finished but a threshold failed, the gate found a
//	   regression, or the audit found an error
//	4  the run was interrupted (Ctrl-C); partial results were written,
//	   unless a second Ctrl-C quit without them
package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
)

// Exit codes; see the package doc.
const (
	exitOK          = 0
	exitError       = 1
	exitUsage       = 2
	exitThresholds  = 3
	exitInterrupted = 4
)

// codeError carries a specific exit code out of a command; a nil err means
// the command already said why (thresholds failed, run interrupted).
type codeError struct {
	code int
	err  error
}

func (e *codeError) Error() string { return e.err.Error() }
func (e *codeError) Unwrap() error { return e.err }

func withCode(code int, err error) error { return &codeError{code: code, err: err} }

// Main runs the CLI with args (without the program name, as in
// os.Args[1:]), writing to os.Stdout and os.Stderr, and returns the exit
// code for os.Exit.
func Main(args []string) int { return run(args) }

// MainWithOutput is Main writing what the commands print to stdout and
// stderr instead (a program or test that keeps the output).
func MainWithOutput(args []string, stdout, stderr io.Writer) int {
	root := newRoot()
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetArgs(args)
	return execute(root)
}

// run executes the CLI with args and returns the exit code.
func run(args []string) int {
	root := newRoot()
	root.SetArgs(args)
	return execute(root)
}

// execute runs a prepared root command and maps its error to an exit code.
func execute(root *cobra.Command) int {
	c, err := root.ExecuteC()
	if err == nil {
		return exitOK
	}
	var ce *codeError
	if errors.As(err, &ce) {
		if ce.err != nil {
			fmt.Fprintln(root.ErrOrStderr(), "sluice:", ce.err)
		}
		return ce.code
	}
	if isUsage(err) {
		// c is the command the error concerns (the root for an unknown
		// command): its help is the one to read.
		fmt.Fprintf(root.ErrOrStderr(), "sluice: %s\nrun '%s --help' for usage\n", strings.TrimRight(err.Error(), "\n"), c.CommandPath())
		return exitUsage
	}
	fmt.Fprintln(root.ErrOrStderr(), "sluice:", err)
	return exitError
}

type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }

func isUsage(err error) bool {
	var ue usageError
	// cobra reports an unknown command or flag as a plain error.
	msg := err.Error()
	return errors.As(err, &ue) || strings.HasPrefix(msg, "unknown command") ||
		strings.HasPrefix(msg, "unknown flag") || strings.HasPrefix(msg, "unknown shorthand flag")
}

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "sluice",
		Short: "Prove a rate-limit policy against honest, laggy and hostile traffic",
		Long: `sluice runs scenario files: populations of honest players, laggy reconnect
storms and hostile floods, replayed against the sluice gate in virtual time
(driver sim) or against a loopback game server over real sockets (driver
loopback). It records HDR latency histograms and every drop by reason,
compares policy variants side by side, checks thresholds, and writes
results.json, report.html and .hgrm files.

Exit codes: 0 ok, 1 error, 2 usage, 3 a threshold failed (or a benchmark
regressed, or the audit found an error), 4 interrupted (partial results
written; a second Ctrl-C quits at once, also with 4, without them).`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(newVersionCmd(), newValidateCmd())
	addCommands(root)
	return root
}

// args wraps a cobra argument check so that its error counts as usage and
// shows the arguments the command takes.
func args(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(c *cobra.Command, a []string) error {
		if err := check(c, a); err != nil {
			if c.HasSubCommands() {
				return usageError{err} // the help lists them
			}
			return usageError{fmt.Errorf("%w\nusage: %s", err, c.UseLine())}
		}
		return nil
	}
}
