// Command sluice runs scenario files against the sluice rate limiter, writes
// results and HTML reports, audits policies, serves the reference game
// server, and gates benchmark regressions. It is package cli's Main; the
// commands, their flags and the exit codes are documented there and in
// sluice --help.
package main

import (
	"os"

	"github.com/sluicedev/sluice/cli"
)

func main() { os.Exit(cli.Main(os.Args[1:])) }
