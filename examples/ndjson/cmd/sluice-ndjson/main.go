// Command sluice-ndjson is the sluice CLI with the example's protocol
// registered, built the way a studio builds its own: a main package that
// registers its protocol plug-in and hands the command line to cli.Main.
// Every sluice command and flag works as in sluice itself; --protocol
// ndjson makes a run's clients speak the example server's
// newline-delimited JSON.
//
//	go run ./examples/ndjson/cmd/ndjson-server -policy scenarios/policies/game.yaml -listen 127.0.0.1:7777
//	go run ./examples/ndjson/cmd/sluice-ndjson run --target 127.0.0.1:7777 --protocol ndjson scenarios/flood-mix.yaml
package main

import (
	"os"

	"github.com/sluicedev/sluice/cli"
	"github.com/sluicedev/sluice/examples/ndjson"
	"github.com/sluicedev/sluice/loadgen/proto"
)

func main() {
	proto.Register(ndjson.Protocol{})
	os.Exit(cli.Main(os.Args[1:]))
}
