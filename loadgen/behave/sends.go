package behave

// Sends returns the kinds of message that b's clients send (OpSend) under
// its parameters, in kind order, each once: what a policy must have a
// channel for (move, ability, chat, purchase; see ChannelsOf), and ping. A
// kind whose stream the parameters turn off (an Honest ChatEvery < 0) is
// not among them; one whose stream is merely rare (a purchase every 2m in a
// 10s run) is. Raw bytes (see WritesRaw) are not messages and are not
// listed. ok is false for a behaviour this function does not know.
func Sends(b Behaviour) (kinds []Kind, ok bool) {
	var set [NumKinds]bool
	switch b := b.(type) {
	case *Honest:
		b.sends(&set)
	case *Laggy:
		b.Honest.sends(&set)
	case *MassReconnect:
		b.Honest.sends(&set)
	case *TinyFlood:
		set[b.kind()] = true
	case *ByteFlood:
		set[b.kind()] = true
	case *BadLength, *Malformed, *Slowloris, *MalformedChurn, *WSSlowUpgrade, *WSFragmentFlood, *WSPingFlood, *WSOversizeHeader,
		*UDPHandshakeFlood, *UDPAmplify, *UDPGarbage, *UDPIDGuess, *UDPCookieReplay:
		// Raw bytes only.
	case *Replay:
		set[b.kind()] = true
	case *ChannelHop:
		for _, t := range b.targets() {
			set[t.Kind] = true
		}
	case *ResetReconnect:
		set[b.kind()] = true
	case *KeyChurn:
		set[b.kind()] = true
	case *HotKey:
		set[b.kind()] = true
	case *PacedReset:
		set[b.kind()] = true
	case *SlotHold:
		set[KindPing] = !b.NoHello
	case *NATChurn:
		// Handshakes only.
	case *HalfClose:
		set[KindChat] = true
	case *SparseIDs:
		b.Honest.sends(&set)
	case *ServerHop:
		set[b.kind()] = true
	default:
		return nil, false
	}
	for k, on := range set {
		if on {
			kinds = append(kinds, Kind(k))
		}
	}
	return kinds, true
}

// sends marks the kinds h's streams send (see Honest.streams).
func (h Honest) sends(set *[NumKinds]bool) {
	set[KindMove] = h.tickRate() > 0
	set[KindAbility] = h.abilityEvery() > 0
	set[KindChat] = h.chatEvery() > 0
	set[KindPurchase] = h.purchaseEvery() > 0
	set[KindPing] = h.pingEvery() > 0
}
