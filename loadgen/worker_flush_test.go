package loadgen

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicedev/sluice/loadgen/behave"
	"github.com/sluicedev/sluice/loadgen/drive"
	"github.com/sluicedev/sluice/loadgen/record"
	"github.com/sluicedev/sluice/loadgen/wire"
)

// scripted is a behaviour that yields fixed actions.
type scripted struct{ acts []behave.Action }

func (*scripted) Name() string    { return "scripted" }
func (*scripted) Validate() error { return nil }
func (s *scripted) Stream(c *behave.Client) behave.Stream {
	return &behave.List{Acts: append([]behave.Action(nil), s.acts...), End: c.End}
}

// lateDriver delivers each scripted event when its clock reaches deliver,
// though the event's At (when it "arrived") is earlier: the worker was busy
// and picked it up late, as with a loopback driver's reading goroutines.
type lateDriver struct {
	now    int64
	script []lateEvent
	writes []int64 // the driver's time of every write
}

type lateEvent struct {
	deliver int64
	ev      drive.Event
}

func (d *lateDriver) Now() int64                      { return d.now }
func (d *lateDriver) Dial(drive.ConnID, uint32) error { return nil }
func (d *lateDriver) Close(drive.ConnID) error        { return nil }
func (d *lateDriver) Write(_ drive.ConnID, _ []byte) error {
	d.writes = append(d.writes, d.now)
	return nil
}
func (d *lateDriver) Poll(_ context.Context, until int64, ev *drive.Event) (bool, error) {
	if len(d.script) > 0 && d.script[0].deliver <= until {
		d.now = max(d.now, d.script[0].deliver)
		*ev = d.script[0].ev
		d.script = d.script[1:]
		return true, nil
	}
	d.now = max(d.now, until)
	return false, nil
}

// TestHeldFramesSentWhenWritten: frames held during the login are written
// when the worker handles the hello's reply, and their service time counts
// from that write, not from when the reply arrived on the socket.
func TestHeldFramesSentWhenWritten(t *testing.T) {
	ms := int64(time.Millisecond)
	conn := drive.ConnID{Client: 0, Gen: 1}
	d := &lateDriver{script: []lateEvent{
		// The hello's reply arrived at 2ms; the worker gets to it at 50ms.
		{50 * ms, drive.Event{Conn: conn, Kind: drive.EvReply, At: 2 * ms, ID: 0, Status: wire.StatusOK}},
		// The purchase's reply, 10ms after the held purchase was written.
		{60 * ms, drive.Event{Conn: conn, Kind: drive.EvReply, At: 60 * ms, ID: 1, Status: wire.StatusOK}},
	}}
	rec, err := record.NewRecorder([]string{"p"}, record.HistConfig{})
	require.NoError(t, err)
	b := &scripted{acts: []behave.Action{
		{At: 0, Op: behave.OpConnect},
		{At: ms, Op: behave.OpSend, Kind: behave.KindPurchase},
	}}
	clients := []behave.Client{{Label: "p", Account: 1, Addr: 1, End: int64(time.Second), Behaviour: b}}
	w, err := drive.NewWorker(d, rec, clients, drive.RunConfig{})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, w.Run(ctx))

	require.Equal(t, []int64{0, 50 * ms}, d.writes, "the hello at 0, the held purchase when the reply was handled")
	require.EqualValues(t, 1, rec.Count(0, behave.KindPurchase, record.Accepted))
	svc := rec.Histogram(0, behave.KindPurchase, record.Service)
	require.NotNil(t, svc)
	require.True(t, svc.ValuesAreEquivalent(svc.Max(), 10*ms), "service time %v, want 10ms (from the write at 50ms)", time.Duration(svc.Max()))
	resp := rec.Histogram(0, behave.KindPurchase, record.Response)
	require.True(t, resp.ValuesAreEquivalent(resp.Max(), 59*ms), "response time %v, want 59ms (from the intended 1ms)", time.Duration(resp.Max()))
}

// bytesDriver is a lateDriver that keeps what was written.
type bytesDriver struct {
	lateDriver
	got []byte
}

func (d *bytesDriver) Write(c drive.ConnID, p []byte) error {
	d.got = append(d.got, p...)
	return d.lateDriver.Write(c, p)
}

// A dribbled piece the client refuses to hold (MaxHeld) is not part of the
// frame: the next piece goes on from where the refused one started, so the
// server never receives a frame with bytes missing from its middle.
func TestRefusedDribblePieceDoesNotAdvanceTheFrame(t *testing.T) {
	ms := int64(time.Millisecond)
	d := &bytesDriver{lateDriver: lateDriver{script: []lateEvent{{ms, drive.Event{Conn: drive.ConnID{Client: 0, Gen: 1}, Kind: drive.EvReply, At: ms, ID: 0, Status: wire.StatusOK}}}}}
	rec, err := record.NewRecorder([]string{"p"}, record.HistConfig{})
	require.NoError(t, err)
	frame := []byte("ABCDEFGHIJ")
	piece := func(at int64) behave.Action { return behave.Action{At: at, Op: behave.OpRaw, Count: 3, Data: frame} }
	b := &scripted{acts: []behave.Action{
		{At: 0, Op: behave.OpConnect},
		{At: 2 * ms, Op: behave.OpFreeze},
		piece(3 * ms), // held: 3 of MaxHeld's 4 bytes
		piece(4 * ms), // refused: 6 > 4
		{At: 5 * ms, Op: behave.OpFlush},
		piece(6 * ms),
	}}
	clients := []behave.Client{{Label: "p", Account: 1, Addr: 1, End: int64(time.Second), Behaviour: b}}
	w, err := drive.NewWorker(d, rec, clients, drive.RunConfig{MaxHeld: 4})
	require.NoError(t, err)
	require.NoError(t, w.Run(context.Background()))
	require.Equal(t, int64(1), rec.Count(0, behave.KindRaw, record.NotSent), "the refused piece")
	hello := len(d.got) - 6
	require.Positive(t, hello)
	require.Equal(t, "ABCDEF", string(d.got[hello:]))
}
