package ndjson

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/sluicedev/sluice/core"
	"github.com/sluicedev/sluice/loadgen/proto"
)

// Name is the name Protocol registers under (sluice run --protocol ndjson).
const Name = "ndjson"

// Protocol is the plug-in that lets sluice's clients speak the server's
// newline-delimited JSON: a proto.Protocol. The zero value is ready to
// use; it holds no state, so it is safe for concurrent use.
type Protocol struct{}

// Name returns Name.
func (Protocol) Name() string { return Name }

// AppendHello appends {"t":"hello","token":...,"label":...}.
func (Protocol) AppendHello(dst, token, label []byte) []byte {
	dst = append(dst, `{"t":"hello","token":`...)
	dst = appendString(dst, token)
	dst = append(dst, `,"label":`...)
	dst = appendString(dst, label)
	return append(dst, "}\n"...)
}

// AppendInput appends {"t":"input","ch":...,"p":...}: the padding is as
// long as the payload, so that a message's size follows it.
func (Protocol) AppendInput(dst []byte, ch proto.Channel, payload []byte) []byte {
	dst = append(dst, `{"t":"input","ch":`...)
	dst = appendString(dst, []byte(ch.Name))
	return appendPad(dst, payload)
}

// AppendRequest appends {"t":"req","ch":...,"id":...,"p":...}.
func (Protocol) AppendRequest(dst []byte, ch proto.Channel, id uint64, payload []byte) []byte {
	dst = append(dst, `{"t":"req","ch":`...)
	dst = appendString(dst, []byte(ch.Name))
	dst = append(dst, `,"id":`...)
	dst = strconv.AppendUint(dst, id, 10)
	return appendPad(dst, payload)
}

// AppendPing appends {"t":"ping","id":...}.
func (Protocol) AppendPing(dst []byte, id uint64) []byte {
	dst = append(dst, `{"t":"ping","id":`...)
	dst = strconv.AppendUint(dst, id, 10)
	return append(dst, "}\n"...)
}

func appendPad(dst, payload []byte) []byte {
	dst = append(dst, `,"p":"`...)
	for range payload {
		dst = append(dst, '0')
	}
	return append(dst, "\"}\n"...)
}

// appendString appends b as a JSON string: quotes, backslashes and
// control bytes escaped.
func appendString(dst, b []byte) []byte {
	dst = append(dst, '"')
	for _, c := range b {
		switch {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c < 0x20:
			dst = fmt.Appendf(dst, `\u%04x`, c)
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, '"')
}

// NewReader reads the server's lines from r, each at most MaxLine bytes.
func (Protocol) NewReader(r io.Reader) proto.Reader {
	return &reader{br: bufio.NewReaderSize(r, MaxLine)}
}

type reader struct {
	br *bufio.Reader
	m  serverMsg
}

var errLine = errors.New("ndjson: not a server line")

func (r *reader) Next(f *proto.Frame) error {
	line, err := r.br.ReadSlice('\n')
	if err != nil {
		if errors.Is(err, bufio.ErrBufferFull) {
			return fmt.Errorf("ndjson: a line over %d bytes", MaxLine)
		}
		return err
	}
	r.m = serverMsg{}
	if err := json.Unmarshal(line, &r.m); err != nil {
		return fmt.Errorf("%w: %v", errLine, err)
	}
	*f = proto.Frame{ID: r.m.ID}
	switch r.m.T {
	case "reply":
		f.Kind = proto.Reply
		switch r.m.Status {
		case "ok":
			f.Status = proto.OK
		case "rejected":
			f.Status, f.Reason, f.RetryAfter = proto.Rejected, reasonOf(r.m.Reason), uint64(max(r.m.RetryNs, 0))
		default:
			f.Status = proto.Failed
		}
	case "pong":
		f.Kind, f.Timestamp = proto.Pong, r.m.ID
	case "bye":
		f.Kind, f.Reason = proto.Disconnect, reasonOf(r.m.Reason)
	default:
		return fmt.Errorf("%w: type %q", errLine, r.m.T)
	}
	return nil
}

// reasonOf is the core.Reason value named (0, an unknown reason, for a
// name it does not know).
func reasonOf(name string) uint8 {
	r, err := core.ParseReason(name)
	if err != nil {
		return 0
	}
	return uint8(r)
}
