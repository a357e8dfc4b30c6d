package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is set at build time with
// -ldflags "-X github.com/sluicedev/sluice/cli.version=v1.2.3";
// otherwise it comes from the module's build information.
var version = ""

func sluiceVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		return moduleVersion(bi)
	}
	return "devel"
}

// sluiceModule is the module this package is part of.
const sluiceModule = "github.com/sluicedev/sluice"

// moduleVersion is sluice's version in a binary's build information: the
// main module's when the binary is sluice's own command, the dependency's
// when it is a program of a studio's that imports this package (its main
// module is the studio's, whose version says nothing of sluice's).
func moduleVersion(bi *debug.BuildInfo) string {
	m := &bi.Main
	if m.Path != sluiceModule {
		m = nil
		for _, d := range bi.Deps {
			if d.Path == sluiceModule {
				m = d
				if d.Replace != nil {
					m = d.Replace
				}
				break
			}
		}
	}
	if m == nil || m.Version == "" || m.Version == "(devel)" {
		return "devel"
	}
	return m.Version
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the sluice version, Go version and platform",
		Args:  args(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			fmt.Fprintf(c.OutOrStdout(), "sluice %s (%s %s/%s)\n", sluiceVersion(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return nil
		},
	}
}
