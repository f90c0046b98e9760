package httpguard

import (
	"context"
	"errors"
	"net/netip"
	"testing"
)

func TestLoopbackAddr(t *testing.T) {
	ok := map[string]string{
		"127.0.0.1:0":          "127.0.0.1:0",
		"127.1.2.3:8080":       "127.1.2.3:8080",
		"[::1]:0":              "[::1]:0",
		"[::ffff:127.0.0.1]:9": "127.0.0.1:9",
		"localhost:0":          "127.0.0.1:0",
		"LocalHost:65535":      "127.0.0.1:65535",
	}
	for in, want := range ok {
		got, err := LoopbackAddr(context.Background(), in)
		if err != nil || got != netip.MustParseAddrPort(want) {
			t.Errorf("LoopbackAddr(%q) = %v, %v; want %s", in, got, err, want)
		}
	}
	for _, in := range []string{
		":0", "0.0.0.0:0", "[::]:0", "192.168.1.10:80", "10.0.0.1:0", "8.8.8.8:53",
		"[fe80::1%lo]:0", "example.com:80", "localhost.evil.example:0", "127.0.0.1",
		"127.0.0.1:http", "127.0.0.1:70000", "127.0.0.1:-1", "", "[::1]", "127.0.0.1:0:0",
	} {
		_, err := LoopbackAddr(context.Background(), in)
		var ae *AddrError
		if !errors.As(err, &ae) {
			t.Errorf("LoopbackAddr(%q) = %v, want an *AddrError", in, err)
		}
	}
}

func TestListenLoopback(t *testing.T) {
	l, err := ListenLoopback(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ap := netip.MustParseAddrPort(l.Addr().String())
	if !ap.Addr().IsLoopback() || ap.Port() == 0 {
		t.Fatalf("bound %v", ap)
	}
	if _, err := ListenLoopback(context.Background(), "0.0.0.0:0"); err == nil {
		t.Fatal("ListenLoopback(0.0.0.0:0) succeeded")
	}
}
