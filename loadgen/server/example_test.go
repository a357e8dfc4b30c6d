package server_test

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/sluicedev/sluice/core"
	"github.com/sluicedev/sluice/loadgen/server"
	"github.com/sluicedev/sluice/loadgen/wire"
)

func Example() {
	s, err := server.New(server.Config{
		Policy: core.Policy{Channels: []core.Channel{
			{Name: "chat", Class: core.ClassRequest, Rate: new(2.0), Burst: new(1.0)},
		}},
	})
	if err != nil {
		panic(err)
	}
	if err := s.Start(); err != nil { // 127.0.0.1, a free port
		panic(err)
	}

	nc, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		panic(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	b, _ := wire.AppendHello(nil, []byte("42"), []byte("example"))
	b, _ = wire.AppendRequest(b, 0, 1, []byte("hi"))
	b, _ = wire.AppendRequest(b, 0, 2, []byte("hi again"))
	nc.Write(b)

	fr, _ := wire.NewFramer(nc, wire.DefaultMaxFrame, 0)
	replies := make([]wire.Msg, 3) // by id: the rejection comes at once, the OK on the tick
	for range 3 {
		var m wire.Msg
		if err := fr.ReadMsg(&m); err != nil {
			panic(err)
		}
		replies[m.ID] = m
	}
	for _, m := range replies {
		fmt.Printf("reply %d: %v %v\n", m.ID, m.Status, core.Reason(m.Reason))
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s.Shutdown(ctx)
	fmt.Println(s.Stats().Populations["example"].Rejected)
	// Output:
	// reply 0: OK None
	// reply 1: OK None
	// reply 2: Rejected ChannelLimit
	// map[ChannelLimit:1]
}
