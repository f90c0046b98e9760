package httpguard

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// AddrError is an address ListenLoopback refuses.
type AddrError struct {
	Addr   string
	Reason string
}

func (e *AddrError) Error() string {
	return fmt.Sprintf("listen address %q: %s; use 127.0.0.1:PORT, [::1]:PORT or localhost:PORT (PORT 0 picks a free one)", e.Addr, e.Reason)
}

// LoopbackAddr checks addr (host:port) and returns the literal address to
// bind: a loopback IP literal as given (IPv4-mapped forms unmapped), or for
// "localhost" the first IPv4 loopback it resolves to (else the first IPv6
// one), provided every address it resolves to is loopback. Everything else
// — no host, an unspecified, private or public address, another name — is
// an *AddrError. Names other than localhost are not resolved at all: a name
// that resolves to loopback today may not tomorrow.
func LoopbackAddr(ctx context.Context, addr string) (netip.AddrPort, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return netip.AddrPort{}, &AddrError{Addr: addr, Reason: "not host:port"}
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return netip.AddrPort{}, &AddrError{Addr: addr, Reason: "the port is not a number from 0 to 65535"}
	}
	var ip netip.Addr
	switch {
	case host == "":
		return netip.AddrPort{}, &AddrError{Addr: addr, Reason: "no host binds every interface"}
	case strings.EqualFold(host, "localhost"):
		if ip, err = resolveLocalhost(ctx, host); err != nil {
			return netip.AddrPort{}, &AddrError{Addr: addr, Reason: err.Error()}
		}
	default:
		a, err := netip.ParseAddr(host)
		if err != nil {
			return netip.AddrPort{}, &AddrError{Addr: addr, Reason: "not an IP literal or localhost"}
		}
		if a.Zone() != "" {
			return netip.AddrPort{}, &AddrError{Addr: addr, Reason: "a zoned address is not loopback"}
		}
		if ip = a.Unmap(); !ip.IsLoopback() {
			return netip.AddrPort{}, &AddrError{Addr: addr, Reason: "not a loopback address"}
		}
	}
	return netip.AddrPortFrom(ip, uint16(p)), nil
}

// resolveLocalhost resolves host (a spelling of localhost) and insists
// every answer is loopback.
func resolveLocalhost(ctx context.Context, host string) (netip.Addr, error) {
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("resolve: %v", err)
	}
	var v4, v6 netip.Addr
	for _, ip := range ips {
		ip = ip.Unmap()
		if !ip.IsLoopback() {
			return netip.Addr{}, fmt.Errorf("resolves to %v, which is not loopback", ip)
		}
		if ip.Is4() && !v4.IsValid() {
			v4 = ip
		} else if ip.Is6() && !v6.IsValid() {
			v6 = ip
		}
	}
	if v4.IsValid() {
		return v4, nil
	}
	if v6.IsValid() {
		return v6, nil
	}
	return netip.Addr{}, fmt.Errorf("resolves to nothing")
}

// ListenLoopback checks addr with LoopbackAddr and listens on TCP there.
// The listener's address is the literal to give Config.Addr.
func ListenLoopback(ctx context.Context, addr string) (net.Listener, error) {
	ap, err := LoopbackAddr(ctx, addr)
	if err != nil {
		return nil, err
	}
	var lc net.ListenConfig
	l, err := lc.Listen(ctx, "tcp", ap.String())
	if err != nil {
		return nil, err
	}
	if got, err := netip.ParseAddrPort(l.Addr().String()); err != nil || !got.Addr().Unmap().IsLoopback() {
		l.Close()
		return nil, &AddrError{Addr: addr, Reason: fmt.Sprintf("bound %v, which is not loopback", l.Addr())}
	}
	return l, nil
}
