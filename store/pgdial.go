package store

import (
	"errors"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sys/unix"
)

// pgDeadAfter is how long a session's connection to the server may go
// unanswered before it counts as lost (ErrServerGone, exit 9). A server
// whose machine went away (a NAS switched off, a cable pulled) sends no
// reset: with the kernel's defaults a statement sent to it failed after
// some 15 minutes of retransmissions, and an idle session noticed after
// two hours. Keepalive probes from 15 s of silence, and a bound on how
// long sent bytes may go unacknowledged (TCP_USER_TIMEOUT), end it within
// a minute. A statement the server takes long to answer is not cut: its
// machine answers the probes.
const pgDeadAfter = 60 * time.Second

// sessionConfig is the configuration of one session, outside the pools,
// of the index at dsn (the listener's, a statement's run behind, the look
// before a pool opens): parsed as the pools parse it, since pgx's own
// parser passes the pools' parameters (pool_max_conn_lifetime=…) on to the
// server, which refuses the session; and set as pgSession sets every
// session.
func sessionConfig(dsn string) (*pgx.ConnConfig, error) {
	p, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	pgSession(&p.ConnConfig.Config)
	return p.ConnConfig, nil
}

// pgSession sets what every session dupefs opens to a PostgreSQL server
// uses, where the URL leaves it: the connect timeout and the dialer.
func pgSession(c *pgconn.Config) {
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = pgConnectTimeout
	}
	d := &net.Dialer{
		KeepAliveConfig: net.KeepAliveConfig{Enable: true, Idle: 15 * time.Second, Interval: 5 * time.Second,
			Count: int((pgDeadAfter - 15*time.Second) / (5 * time.Second))},
		Control: boundUnanswered,
	}
	c.DialFunc = d.DialContext
}

// boundUnanswered sets TCP_USER_TIMEOUT on a TCP socket (a unix socket's
// peer is this machine's).
func boundUnanswered(network, _ string, rc syscall.RawConn) error {
	if !strings.HasPrefix(network, "tcp") {
		return nil
	}
	var serr error
	err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, int(pgDeadAfter.Milliseconds()))
	})
	return errors.Join(err, serr)
}
