package atomicbucket_test

import (
	"fmt"
	"time"

	"github.com/sluicedev/sluice/atomicbucket"
)

// Ten tokens a second with a burst of three, on a caller-passed clock: the
// burst passes at once, the fourth take waits exactly one token's time.
func Example() {
	b, err := atomicbucket.NewAt(10, 3, 0)
	if err != nil {
		panic(err)
	}
	for i := 0; i < 4; i++ {
		r := b.TakeAt(0, 1)
		fmt.Println(r.Status(), r.Remaining(), r.RetryAfter())
	}
	fmt.Println(b.TakeAt(int64(50*time.Millisecond), 1).RetryAfter())
	fmt.Println(b.TakeAt(int64(100*time.Millisecond), 1).OK())
	fmt.Println(b.TakeAt(0, 4).Status())
	// Output:
	// allowed 2 0s
	// allowed 1 0s
	// allowed 0 0s
	// denied 0 100ms
	// 50ms
	// true
	// invalid
}
