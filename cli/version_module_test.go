package cli

import (
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A studio's own CLI (a main module of its own that imports this package)
// records the version of sluice it was built with, not its own: results
// of sluice and of the studio's build at the same sluice version merge.
func TestModuleVersionIsSluicesInAStudiosBuild(t *testing.T) {
	own := &debug.BuildInfo{Main: debug.Module{Path: sluiceModule, Version: "v1.4.0"}}
	assert.Equal(t, "v1.4.0", moduleVersion(own))
	assert.Equal(t, "devel", moduleVersion(&debug.BuildInfo{Main: debug.Module{Path: sluiceModule, Version: "(devel)"}}))

	studio := &debug.BuildInfo{
		Main: debug.Module{Path: "example.com/mygame", Version: "v0.9.0"},
		Deps: []*debug.Module{
			{Path: "github.com/spf13/cobra", Version: "v1.8.0"},
			{Path: sluiceModule, Version: "v1.4.0"},
		},
	}
	assert.Equal(t, "v1.4.0", moduleVersion(studio))
	studio.Deps[1].Replace = &debug.Module{Path: "../sluice", Version: ""}
	assert.Equal(t, "devel", moduleVersion(studio), "a local replacement has no version")
	assert.Equal(t, "devel", moduleVersion(&debug.BuildInfo{Main: debug.Module{Path: "example.com/mygame", Version: "v0.9.0"}}))
}
