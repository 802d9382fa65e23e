package store

import (
	"context"
	"net"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"golang.org/x/sys/unix"
)

// A session's TCP connection gives up on a server that stopped answering
// within pgDeadAfter: keepalive probes on, and unacknowledged bytes
// bounded.
func TestPostgresSessionNoticesADeadServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skipf("no TCP on loopback: %v", err)
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			defer c.Close()
			c.Read(make([]byte, 1))
		}
	}()
	cfg, err := pgconn.ParseConfig("postgres://u@" + ln.Addr().String() + "/db?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	pgSession(cfg)
	c, err := cfg.DialFunc(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rc, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct{ level, opt, v int }{
		"SO_KEEPALIVE":     {unix.SOL_SOCKET, unix.SO_KEEPALIVE, 1},
		"TCP_KEEPIDLE":     {unix.IPPROTO_TCP, unix.TCP_KEEPIDLE, 15},
		"TCP_USER_TIMEOUT": {unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, int(pgDeadAfter.Milliseconds())},
	}
	rc.Control(func(fd uintptr) {
		for name, w := range want {
			if v, err := unix.GetsockoptInt(int(fd), w.level, w.opt); err != nil || v != w.v {
				t.Errorf("%s = %d (%v), want %d", name, v, err, w.v)
			}
		}
	})
	if cfg.ConnectTimeout != pgConnectTimeout {
		t.Errorf("connect timeout %v, want %v", cfg.ConnectTimeout, pgConnectTimeout)
	}
}
