package core_test

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/sluicedev/sluice/core"
)

// A limiter of 2 messages per second per player, burst 2, with the default
// escalation (5 denials inside 8 s lock a player out for 30 s), driven at
// explicit times.
func ExampleLimiter() {
	lim, err := core.NewLimiter(core.LimiterConfig{
		Rate:    2,
		Burst:   2,
		MaxKeys: 1_000_000,
		Clock:   func() int64 { return 0 }, // the server's clock; here fixed
	})
	if err != nil {
		panic(err)
	}
	defer lim.Close()

	const player = 42
	ms := int64(time.Millisecond)
	for i := int64(0); i < 8; i++ {
		d := lim.TakeAt(player, i*10*ms, 1)
		fmt.Printf("t=%3dms %v\n", i*10, d)
	}
	// Addresses and strings are keys too (hashed with the limiter's seed).
	fmt.Println(lim.TakeAddrAt(netip.MustParseAddr("203.0.113.7"), 0, 1))

	r := lim.ReportAt(100 * ms)
	fmt.Println("tracked:", r.Tracked, "lockouts:", r.ActiveLockouts, "soft warnings:", r.SoftWarnings)
	// Output:
	// t=  0ms allowed (1 left)
	// t= 10ms allowed (0 left)
	// t= 20ms denied: AccountLimit, retry after 480ms
	// t= 30ms denied: AccountLimit, retry after 470ms
	// t= 40ms denied: AccountLimit, retry after 460ms
	// t= 50ms denied: AccountLimit, retry after 450ms
	// t= 60ms denied: Lockout, retry after 30s
	// t= 70ms denied: Lockout, retry after 29.99s
	// allowed (1 left)
	// tracked: 2 lockouts: 1 soft warnings: 4
}
