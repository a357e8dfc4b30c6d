package core

import "testing"

func TestLimiterRefundUndoesATake(t *testing.T) {
	l, err := NewLimiter(LimiterConfig{Rate: 10, Burst: 4, MaxKeys: 16})
	if err != nil {
		t.Fatal(err)
	}
	if d := l.TakeAt(1, 0, 4); !d.Allowed {
		t.Fatalf("take: %v", d)
	}
	l.RefundAt(1, 0, 4)
	if lv := l.LevelAt(1, 0); lv != 4 {
		t.Fatalf("level after refund = %v, want 4", lv)
	}
}
