package shardmap

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestPassPathInlines guards the pass path of TakeAt: it must call nothing,
// so the compiler has to inline into TakeAt itself atomicbucket's Snapshot,
// PassAt, IsFull, NextFull and NextPartial and this package's hash and find
// (PassAt and NextFull sit
// just under Go's inlining budget; a line more in one of them
// turns the take into a call with spills around it, and no test of
// behaviour would notice).
func TestPassPathInlines(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles the package")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	first, last := funcLines(t, "map.go", "TakeAt")
	out, err := exec.Command(gobin, "build", "-gcflags=-m", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, call := range []string{
		"atomicbucket.(*Limit).Snapshot", "atomicbucket.Snapshot.PassAt",
		"atomicbucket.Pass.IsFull", "atomicbucket.Pass.NextFull", "atomicbucket.Pass.NextPartial",
		"(*Map).hash", "(*table).find",
	} {
		want := "inlining call to " + call
		found := false
		for _, line := range strings.Split(string(out), "\n") {
			// "FILE:LINE:COL: inlining call to ...", the file named as the
			// go command pleases ("./map.go", "shardmap/map.go").
			parts := strings.SplitN(line, ":", 3)
			if len(parts) < 3 || filepath.Base(parts[0]) != "map.go" || !strings.Contains(parts[2], want) {
				continue
			}
			if n, err := strconv.Atoi(parts[1]); err == nil && n >= first && n <= last {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("Map.TakeAt (map.go:%d-%d): no %q in the compiler's inlining report", first, last, want)
		}
	}
}

// funcLines returns the first and last line of method name in file.
func funcLines(t *testing.T, file, name string) (first, last int) {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Name.Name == name && fd.Recv != nil {
			return fset.Position(fd.Pos()).Line, fset.Position(fd.End()).Line
		}
	}
	t.Fatalf("%s: no method %s", file, name)
	return 0, 0
}
