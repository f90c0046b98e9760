package product

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"

	"github.com/needle-dev/needle/product/internal/contentid"
)

// mustID returns the content id of a value the product itself built; such a
// value always encodes.
func mustID(tag string, v any) string {
	id, err := contentid.Of(tag, v)
	if err != nil {
		panic(fmt.Sprintf("product: %s does not encode: %v", tag, err))
	}
	return id
}

func mustJSON(v any) string {
	c, err := contentid.Canonical(v)
	if err != nil {
		panic(fmt.Sprintf("product: value does not encode: %v", err))
	}
	return string(c)
}

// newSessionID returns a fresh session id with a readable prefix.
func newSessionID(prefix string) string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand never fails on supported platforms
	return prefix + "-" + hex.EncodeToString(b[:])
}

// newChangeID returns a fresh opaque change id.
func newChangeID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "chg_" + hex.EncodeToString(b[:])
}
