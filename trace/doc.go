// Package trace is sluice's recorded-traffic format: what a server's gate
// saw (sessions opening, authenticating and closing, every read and
// message with the decision the gate made on it, labels a server gives
// its sessions), written while a server runs and read back, one record at
// a time, to replay it against another policy. No payload byte is ever
// recorded: a message is its time, session, kind name, size, request id,
// match id, flags and decision. Accounts and addresses can be recorded as
// keyed hashes (Header.Hashed), so a trace shows which messages came from
// the same player without saying who the player is.
//
// Writer writes the format, Reader reads it, Recorder drains a gate's
// core.RecordBuffer into a Writer on a goroutine of its own; ReadJSONL and
// WriteJSONL convert to and from JSON Lines, and Summarize computes what
// `sluice trace inspect` shows.
//
// # The file format, version 2
//
// All integers are unsigned. "uvarint" is the base-128 varint of
// encoding/binary (protobuf's): seven bits a byte, least significant group
// first, the high bit set on every byte but the last, at most 10 bytes.
// "u32" is 4 bytes little-endian.
//
//	file   = magic version headerLen header block* end
//	magic  = the 8 bytes "SLUTRACE"
//	version = 1 byte, 2 for this version (this package reads 1 and 2, below)
//	headerLen = u32, at most 1 MiB
//	header = headerLen bytes of one JSON object (UTF-8), below
//	block  = payloadLen:u32 rawLen:u32 count:u32 crc:u32 payload
//	end    = the 16-byte block header with all four fields 0, then the end of the file
//
// The header object has the fields
//
//	"recorder"       string  what wrote the trace ("sluice serve 1.2.0", say)
//	"origin"         string  RFC 3339 time with nanoseconds: the wall time of record time 0
//	"policy_digest"  string  "sha256:" and the hex SHA-256 of the recording policy's
//	                         canonical JSON (core.Policy, normalized), "" if unknown
//	"hashed"         bool    accounts and addresses are keyed hashes (below)
//	"note"           string  free text, optional
//
// and a reader ignores fields it does not know.
//
// A block holds count entries (at least 1), stored by column: the
// entries' fields, below, are each written to one of 11 columns, in
// entry order, and each column is compressed apart, because a column's
// bytes are alike (the least significant bytes of time deltas, sessions,
// kinds and sizes) and compress much better alone than interleaved. A
// block's payload is payloadLen bytes, the 11 columns in order, each
//
//	column = rawLen:uvarint (compLen:uvarint frame)?   (the frame is absent when rawLen is 0)
//
// where frame is compLen bytes of one zstd frame (RFC 8878) that
// decompresses to exactly the column's rawLen bytes. The block header's
// rawLen is the sum of the columns' (at most 16 MiB); crc is the CRC-32C
// (Castagnoli) of the payload. Blocks are independent: each starts its
// time deltas from 0 and its kind table empty, so a reader that finds one
// block damaged can skip it (its header says how long it is and how many
// entries it held) and go on with the next. A file that ends before the
// end block is truncated.
//
// The columns, in their order:
//
//	0  head      the head byte of every entry (count bytes)
//	1  time0     bits 0–7 of every entry's dt (count bytes)
//	2  time1     bits 8–15 of dt (count bytes)
//	3  time2     bits 16–23 of dt (count bytes)
//	4  time3     bits 24–31 of dt (count bytes); the four bytes all 0xff
//	             (dt ≥ 0xffffffff) say that dt is instead the entry's first
//	             field in the other column, as a uvarint
//	5  session   session
//	6  decision  decision
//	7  kind      a message's kind and then its size (they go together,
//	             and zstd finds the pairs); a read's size
//	8  request   a message's or done's request
//	9  match     a message's match
//	10 other     every other field: wide dts, an open's address, an auth's
//	             account, a label's label and group, a kind definition's
//	             index and name, a lost record's count
//
// A reader decodes entry after entry, taking each field from the next
// unread bytes of its column; a block is damaged if a column ends before
// its entries do or has bytes left after its last entry, or the four time
// columns do not hold count bytes each.
//
// An entry is a head byte, a time delta, and fields by operation (the
// column of each field as above):
//
//	head   = 1 byte: operation in bits 0–3, flags in bits 4–6 (messages; 0 otherwise)
//	dt     = the record's time minus the previous record's in the block
//	         (the first record's: its time), in ns since origin; records
//	         are in time order
//	decision = 1 byte: action in bits 0–1 (0 Accept, 1 Drop, 2 Reject,
//	         3 Disconnect), bit 2 shadow (accepted only because the gate ran
//	         in shadow mode; Action is then Accept and reason what it would
//	         have refused for), reason in bits 3–7 (core.Reason's stable numbers:
//	         0 None, 1 ChannelLimit, 2 ByteLimit, 3 FrameLimit, 4 AccountLimit,
//	         5 MatchLimit, 6 AddressLimit, 7 InFlightLimit, 8 Oversize,
//	         9 Malformed, 10 Duplicate, 11 Replay, 12 NoSession, 13 Locked,
//	         14 Lockout, 15 TableFull, 16 QueueFull, 17 Closed)
//	session = uvarint: the trace's own session number, 1, 2, ... in order of
//	         opening (never reused in a trace); 0 for none (a refused open, a
//	         message for no open session)
//
//	op  name       fields after head and dt
//	1   open       session decision address
//	2   auth       session decision account:uvarint
//	3   read       session decision size:uvarint (bytes the server read at once)
//	4   message    session decision kind:uvarint size:uvarint request:uvarint match:uvarint
//	5   done       session request:uvarint (the server finished the request)
//	6   close      session
//	7   unchecked  as message: a frame the server read but the gate did not
//	               check (its read was refused, and the decision is the
//	               read's; or the server decided it itself)
//	8   label      session label:1 byte (0 unknown, 1 honest, 2 hostile) groupLen:uvarint group
//	9   kind       index:uvarint (≥ 1) nameLen:uvarint name (defines a kind for
//	               the rest of the block; at most 255 kinds a block)
//	10  lost       count:uvarint (records the recorder had to drop here: its buffer was full)
//
// Message flags (head bits 4–5): bit 4 malformed (the server's decoder
// could not decode the frame), bit 5 charged (its bytes were charged by
// the read before it). Head bit 6, on a message with bit 5 set only,
// says the entry stands for two records: an accepted read (decision 0) of
// the message's size, at its time, of its session, and then the message;
// a reader hands out the read first. Most frames of a game arrive one to
// a read, and this halves what they cost. Bit 7 is 0. The record numbers
// of errors count entries. Kind 0 means "no channel" (a frame that names
// none); any other kind must have been defined earlier in its block by a
// kind record, whose name is the channel's name in the recording policy
// (names are at most 64 bytes of letters, digits, '_', '-' and '.').
// Strings (group and kind names) are UTF-8, at most 255 bytes.
//
// Version 1 is the same file but for its blocks: a block's payload is one
// zstd frame that decompresses to the block header's rawLen bytes, which
// are the block's entries one after the other, each its head byte, dt as
// a uvarint, and then its fields in the order of the table above.
//
// An address is a form byte and its bytes: 0 none; 4 an IPv4 address (4
// bytes) and port (2 bytes, big-endian); 6 an IPv6 address (16 bytes) and
// port; 8 a keyed hash (8 bytes, big-endian). With "hashed" set an
// account is a keyed hash too. The hash of a value is the first 8 bytes,
// big-endian, of HMAC-SHA256(key, v), with 0 read as 1: for an account v
// is its 8 bytes big-endian, for an address its 16-byte IPv6 form (IPv4
// mapped into ::ffff:0:0/96), without the port. The key is the
// recorder's; it is not in the trace.
//
// # Errors
//
// Every error a Reader returns for bad input is a *FormatError naming the
// byte offset of the block (or header) and the record number (counted from
// 0 over the whole file) where it found the damage; errors.Is tells the
// cause: ErrTruncated, ErrCorrupt, ErrVersion, ErrUnknownKind. With
// ReaderOptions.Partial a Reader instead ends cleanly at the damage (or
// skips a corrupt block whose header is whole) and Damage says what was lost.
package trace
