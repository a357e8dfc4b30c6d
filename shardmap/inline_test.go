package shardmap

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestPassPathInlines guards the pass path of TakeAt: it must call nothing,
// so the compiler has to inline atomicbucket's Snapshot, PassAt and Next
// into it (PassAt and Next sit just under Go's inlining budget; a line
// more in one of them turns the take into a call with spills around it,
// and no test of behaviour would notice).
func TestPassPathInlines(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles the package")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	out, err := exec.Command(gobin, "build", "-gcflags=-m", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, call := range []string{"(*Limit).Snapshot", "Snapshot.PassAt", "Pass.Next"} {
		want := "inlining call to atomicbucket." + call
		found := false
		for _, line := range strings.Split(string(out), "\n") {
			// The file is named as the go command pleases ("./map.go",
			// "shardmap/map.go"), so by its base name.
			file, _, _ := strings.Cut(line, ":")
			if filepath.Base(file) == "map.go" && strings.Contains(line, want) {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("map.go: no %q in the compiler's inlining report", want)
		}
	}
}
