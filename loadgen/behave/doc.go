// Package behave is what the load harness's clients do: plans of
// populations, the behaviours (honest, laggy, hostile) that turn each client
// into a stream of timed actions, and the kinds of message those actions
// send. It neither sends nor records anything: a drive.Worker carries the
// actions out through a driver (loadgen/sim, loadgen/loopback), and
// loadgen/record counts what happened.
//
// # Model
//
// A Plan is a seed, a duration and populations; each Population is a
// number of clients of one Behaviour, with an identity layout (PerAddress
// clients share a source address, PerAccount an account), an active window
// (Start, Stop), an Arrival ("all" at Start, "ramp" evenly over Over,
// "poisson" at Rate clients per second) and a Transport (tcp, ws or udp;
// "" is the run's). Plan.Clients expands it; each
// Client has its own seed (ClientSeed), so the same plan always yields the
// same traffic whatever the driver.
//
// A Behaviour turns a client into a Stream of timed Actions (connect, dial,
// send, raw bytes, freeze and flush, disconnect, retry), pulled lazily.
//
// # Kinds on the wire
//
// Each sendable kind is one frame type of the reference protocol
// (loadgen/wire). Inputs and requests carry a channel byte: the index, in
// the policy's Channels, of the channel named after the kind (ChannelsOf;
// DefaultPolicy and DefaultChannels use the indexes below). A kind whose
// channel the policy lacks is not sent (NotSent).
//
//	kind      frame    channel    DefaultChannels  reply
//	hello     Hello    -          -                Reply id 0 (or Disconnect)
//	move      Input    "move"     0                none
//	ability   Input    "ability"  1                none
//	chat      Request  "chat"     2                Reply (same id)
//	purchase  Request  "purchase" 3                Reply (same id)
//	ping      Ping     "ping"*    -                Pong (same timestamp)
//	raw       any bytes (hostile)                  none
//	session   (the server ending a session: Disconnect or close)
//
// * the server checks pings on its ping channel ("ping" in DefaultPolicy);
// without one, on a bucket of its own (10 per second per connection).
// A Hello's token is the account in decimal and its label the population's
// name, so the server counts its decisions per population.
//
// # Behaviours
//
// NewBehaviour returns a behaviour by name with every parameter at zero,
// which means its default; a negative duration or rate, where noted, turns
// that stream off, and a negative spread, jitter or probability, where
// noted, means none (a zero would mean the default). Durations are Go
// durations; rates are per second.
//
// honest (Honest): a real player. It connects once, at a uniform time in
// [0, ConnectSpread) after its arrival, and plays until the end of its
// window.
//
//	ConnectSpread   1s     first connect within this after arrival (negative: at arrival)
//	TickRate        20     movement inputs per second (negative: none)
//	TickJitter      5ms    each tick moved by up to ±this, below half a tick (negative: none)
//	MoveSize        12     movement payload bytes
//	AbilityEvery    2s     mean gap between ability uses, exponential (negative: none)
//	DoubleClick     0.2    probability that a use is a double click (negative: never)
//	DoubleClickGap  120ms  mean gap of a double click (uniform ±50%)
//	AbilitySize     4      ability payload bytes
//	ChatEvery       15s    mean gap between chat lines, exponential (negative: none)
//	ChatSize        40     mean chat payload bytes (uniform ±50%)
//	PurchaseEvery   2m     mean gap between purchases, exponential (negative: none)
//	PurchaseSize    16     purchase payload bytes
//	PingEvery       1s     ping period, ±10% jitter (negative: none)
//
// A NAT crowd is an honest population with PerAddress > 1 (NATCrowd).
//
// laggy (Laggy): honest (all of Honest's parameters) on a bad network.
//
//	FreezeEvery  10s    mean gap from a freeze's end to the next, exponential (negative: none)
//	FreezeFor    800ms  mean freeze length (uniform ±50%); held input is flushed in one write at its end
//	DropEvery    30s    mean gap from a drop's last ladder rung to the next drop, exponential (negative: none)
//	Ladder              how it reconnects after a drop (below)
//
// A Ladder retries (OpRetry: a connect made only if the client is down)
// with exponential backoff:
//
//	Base      250ms  delay before the first attempt
//	Factor    2      each delay is the previous × Factor (1 to 100)
//	Max       8s     cap on one delay before its jitter
//	Jitter    0.5    each capped delay scaled by a uniform factor in [1−Jitter, 1+Jitter] (negative: none)
//	Attempts  8      attempts per ladder
//
// The jitter applies after the cap, so that clients at the cap stay spread
// out instead of retrying in step: a delay is at most Max × (1+Jitter)
// (Max with no jitter).
//
// mass-reconnect (MassReconnect): honest (all of Honest's parameters),
// and at RestartAt every such client drops its connection, notices within
// Detect and climbs a Ladder: the herd after a server restart.
//
//	RestartAt  half the window  from the start of the population's window
//	Detect     1s               each client notices at a uniform time in [0, Detect)
//	Ladder                      how it reconnects
//
// Every hostile behaviour embeds Persist: it connects at a uniform time in
// [0, ConnectSpread) after its arrival (default 1s; negative: at arrival)
// and, whenever it is down, retries every RetryEvery (default 1s, ±10%;
// negative: never).
//
// tiny-flood (TinyFlood): many tiny frames per write; the frame budget
// must catch it.
//
//	FramesPerWrite   64    frames packed into one write
//	WritesPerSecond  100   writes per second, ±10%
//	Kind             move  what the frames are (an empty input: 6 bytes)
//
// byte-flood (ByteFlood): frames just under the maximum size; the byte
// budget must catch it.
//
//	MaxFrame         4096  the server's maximum frame size (wire.DefaultMaxFrame)
//	Under            1     bytes under MaxFrame per frame
//	FramesPerWrite   4     frames per write
//	WritesPerSecond  50    writes per second, ±10%
//	Kind             move  move, ability, chat or purchase
//
// bad-length (BadLength): length prefixes that lie, each attack on a
// fresh connection unless SameConn.
//
//	Mode      oversize  "oversize" (a header above MaxFrame, sometimes 2³²−1),
//	                    "short" (a request cut inside its fixed fields), "long"
//	                    (a header promising more than is sent), or "mixed"
//	MaxFrame  4096      the server's maximum frame size
//	Every     200ms     mean gap between attacks (uniform ±50%)
//	SameConn  false     keep attacking on one connection
//
// malformed (Malformed): well-delimited frames that do not decode, or
// random bytes, on a session.
//
//	Mode            malformed  "malformed", "garbage" (1 to MaxGarbage random bytes) or "mixed"
//	Every           50ms       mean gap between writes (uniform ±50%)
//	FramesPerWrite  1          malformed frames per write
//	MaxGarbage      256        largest garbage write
//
// slowloris (Slowloris): a valid frame dribbled a few bytes at a time.
// By default it dials without a Hello and dribbles one. A frame is
// dribbled to its end on one connection, then the next starts; a new
// connection (after the server cut the last one mid-frame, say) starts a
// frame afresh, as a real slow client does.
//
//	BytesPerWrite  1      bytes per write
//	Every          500ms  gap between writes, ±10%
//	Session        false  log in first and dribble requests instead (each its own id, on DefaultChannels' chat)
//
// replay (Replay): duplicate requests (the same id while the first is in
// flight) and replays (an id already answered).
//
//	Mode         both      "both" (each attack one or the other), "duplicate" or "replay"
//	Every        200ms     mean gap between attacks (uniform ±50%)
//	Copies       3         copies sent after each original
//	ReplayDelay  100ms     how long after the original a replay goes
//	Kind         purchase  chat or purchase
//
// channel-hop (ChannelHop): every channel at once, each just under its
// own rate, so only the account and aggregate buckets see the total.
//
//	Targets  move 20, ability 5, chat 2, purchase 1  channels and the rates their limits allow (DefaultHopTargets)
//	Margin   0.9                                     each channel at Margin × its rate, no jitter
//	Size     8                                       payload bytes
//
// reset-reconnect (ResetReconnect): a burst over a channel's limit, then
// a reconnect (same account) and another burst, hoping for a fresh bucket.
//
//	Kind   ability  the channel it bursts
//	Burst  20       frames per burst, in one write
//	Every  500ms    mean gap between reconnects (uniform ±50%)
//
// key-churn (KeyChurn): a new identity again and again (accounts with the
// top bit set, ChurnAccount), to fill keyed tables and dodge per-account
// limits.
//
//	Every     50ms  mean gap between identities (uniform ±50%)
//	Messages  3     requests sent under each identity, in one write
//	Kind      chat  what it sends
//
// hot-key (HotKey): one kind of request at a steady rate; with PerAccount
// = Clients (HotKeyCrowd) one account is hammered from many connections.
//
//	Rate  50        requests per second per connection, ±10%
//	Kind  purchase  what it sends
//	Size  16        payload bytes
//
// paced-reset (PacedReset): exactly a channel's burst on each connection,
// then a reconnect (same account), at a steady pace: never over a
// per-connection limit, so only a limit kept per account bounds it.
//
//	Kind   chat   the channel it sends on
//	Burst  5      frames per connection, in one write
//	Every  125ms  time between reconnects, ±10%
//
// malformed-churn (MalformedChurn): a new identity again and again, each
// sending a few frames that do not decode, so its account entry carries
// strikes and cannot be forgotten for a while; with Addresses > 1 each
// client cycles its identities over that many source addresses of its own.
//
//	Every      20ms  mean gap between identities (uniform ±50%)
//	Frames     4     malformed frames under each identity, in one write
//	Addresses  1     source addresses each client cycles through
//
// slot-hold (SlotHold): one connection held per client, logged in under
// its own account and kept alive by rare pings; with PerAddress = Clients
// one host holds as many slots as the server lets one address have.
//
//	ConnectSpread  8s     the connect is uniform in [0, ConnectSpread) after the arrival
//	PingEvery      20s    gap between pings, ±10%
//	RetryEvery     10s    while down, reconnect this often
//	NoHello        false  dial and never say Hello
//
// nat-churn (NATChurn): log in and walk away a quarter of Every later,
// again and again: handshakes that are never played, behind a crowd's
// address (Population.SameAddressAs).
//
//	Every  40ms  mean gap between handshakes (uniform ±50%)
//
// half-close (HalfClose), honest: connect, send Requests chats in one
// write, half-close the socket (OpHalfClose) and expect the answers.
//
//	Every     4s  mean gap between rounds (uniform ±50%), each on a new connection
//	Requests  3   chats before the half-close
//
// sparse-ids (SparseIDs), honest: Honest, with request ids spread over all
// 64 bits (ReuseSparse) instead of counting up; the same parameters.
//
// server-hop (ServerHop): one account's request flood spread over every
// game server of a fleet run (RunSpec.Servers), each client reconnecting
// to the next server after each throttle (a rejection, or a disconnect).
//
//	Kind       chat  the request channel it floods (chat or purchase)
//	PerSecond  200   requests per second per client, ±10%
//	Size       8     payload bytes
package behave
