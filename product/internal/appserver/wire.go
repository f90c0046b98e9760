package appserver

import (
	"bytes"
	"encoding/json"
	"errors"
)

// Tee directions.
const (
	DirC2S = "c2s" // client to server
	DirS2C = "s2c" // server to client
)

// wireMsg is any incoming message. Which fields are present decides what it
// is (see kind); everything else on the line is ignored.
type wireMsg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *RPCError       `json:"error"`
}

type msgKind int

const (
	kindInvalid msgKind = iota
	kindResponse
	kindRequest
	kindNotification
)

func (m *wireMsg) kind() msgKind {
	hasID := len(m.ID) > 0 && string(m.ID) != "null"
	switch {
	case hasID && m.Method != "":
		return kindRequest
	case m.Method != "":
		return kindNotification
	case hasID && (m.Result != nil || m.Error != nil):
		return kindResponse
	default:
		return kindInvalid
	}
}

// decodeMessage parses one line and classifies it.
func decodeMessage(line []byte) (wireMsg, msgKind, error) {
	var m wireMsg
	if err := json.Unmarshal(line, &m); err != nil {
		return m, kindInvalid, err
	}
	k := m.kind()
	if k == kindInvalid {
		return m, k, errors.New("neither request, response nor notification")
	}
	return m, k, nil
}

// outMsg is any outgoing message. The field order puts method before id, as
// the server's own clients do; omitted fields are never sent, and there is
// deliberately no "jsonrpc" field.
type outMsg struct {
	Method string          `json:"method,omitempty"`
	ID     json.RawMessage `json:"id,omitempty"`
	Params any             `json:"params,omitempty"`
	Result any             `json:"result,omitempty"`
	Error  *RPCError       `json:"error,omitempty"`
}

// isBlank reports whether a line carries no message at all.
func isBlank(line []byte) bool {
	return len(bytes.TrimSpace(line)) == 0
}
