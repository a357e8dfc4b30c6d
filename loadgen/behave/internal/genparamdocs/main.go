// Command genparamdocs writes loadgen/behave's paramdocs_gen.go: the doc comment
// of every struct field in package behave, which BehaviourParams reads.
// Run it with go generate ./loadgen/behave; a test fails while the file is stale.
package main

import (
	"log"
	"os"

	"github.com/sluicedev/sluice/internal/fielddoc"
)

func main() {
	docs, err := fielddoc.Read(".")
	if err != nil {
		log.Fatal(err)
	}
	src, err := fielddoc.GoFile("genparamdocs", "behave", "fieldDocs", docs)
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile("paramdocs_gen.go", src, 0o644); err != nil {
		log.Fatal(err)
	}
}
