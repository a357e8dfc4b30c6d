package core

import "testing"

// A refund gives back exactly what one take took: starting below full, a
// take then its refund leave the level where it was, not at the burst.
func TestLimiterRefundUndoesATake(t *testing.T) {
	l, err := NewLimiter(LimiterConfig{Rate: 10, Burst: 4, MaxKeys: 16})
	if err != nil {
		t.Fatal(err)
	}
	if d := l.TakeAt(1, 0, 3); !d.Allowed {
		t.Fatalf("take: %v", d)
	}
	if d := l.TakeAt(1, 0, 1); !d.Allowed {
		t.Fatalf("take: %v", d)
	}
	l.RefundAt(1, 0, 1)
	if lv := l.LevelAt(1, 0); lv != 1 {
		t.Fatalf("level after refund = %v, want 1", lv)
	}
	l.RefundAt(1, 0, 10)
	if lv := l.LevelAt(1, 0); lv != 4 {
		t.Fatalf("level after an over-refund = %v, want the burst 4", lv)
	}
}
