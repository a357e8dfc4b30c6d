package loadgen

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicedev/sluice/loadgen/behave"
	"github.com/sluicedev/sluice/loadgen/drive"
)

// A loopback run of several servers, whose servers listen on TCP only,
// refuses a transport they do not speak, naming the field, rather than
// run clients whose datagrams or upgrades no server answers (over UDP
// every session was counted Disconnected).
func TestFleetLoopbackRefusesTransportsItDoesNotSpeak(t *testing.T) {
	for _, tr := range []string{drive.TransportWS, drive.TransportUDP} {
		t.Run(tr, func(t *testing.T) {
			s := hopSpec(2)
			s.Transport = tr
			_, err := RunLoopback(context.Background(), s, hopPolicy(false))
			var pe *behave.ParamError
			require.True(t, errors.As(err, &pe), "%v", err)
			require.Equal(t, "Servers", pe.Field)
			require.Contains(t, err.Error(), "does not speak")
		})
	}
}
