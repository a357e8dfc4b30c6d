// Command ndjson-server runs the example newline-delimited JSON game
// server (package ndjson) with a sluice policy file until interrupted.
//
//	go run ./examples/ndjson/cmd/ndjson-server -policy scenarios/policies/game.yaml -listen 127.0.0.1:7777
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"

	"github.com/sluicedev/sluice/core"
	"github.com/sluicedev/sluice/examples/ndjson"
)

func main() {
	policy := flag.String("policy", "", "sluice policy file (YAML or JSON)")
	listen := flag.String("listen", "127.0.0.1:7777", "address to listen on")
	flag.Parse()
	if *policy == "" {
		fmt.Fprintln(os.Stderr, "ndjson-server: -policy FILE is required")
		os.Exit(2)
	}
	p, err := core.LoadPolicy(*policy)
	if err != nil {
		fmt.Fprintf(os.Stderr, "ndjson-server: %s: %v\n", *policy, err)
		os.Exit(1)
	}
	srv, err := ndjson.NewServer(p, *listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ndjson-server:", err)
		os.Exit(1)
	}
	fmt.Printf("ndjson-server: serving %s on %s (Ctrl-C to stop)\n", *policy, srv.Addr())
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt)
	<-stop
	srv.Close()
}
