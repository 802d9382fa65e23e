package main

import (
	"net"
	"os"
)

// sdNotify tells the service manager a state change ("READY=1",
// "STOPPING=1", "STATUS=…"), as sd_notify(3) does: a datagram to the
// socket named by $NOTIFY_SOCKET (a leading '@' is the abstract
// namespace). Without $NOTIFY_SOCKET it does nothing; a failure to send
// is not the command's failure.
func sdNotify(state string) {
	name := os.Getenv("NOTIFY_SOCKET")
	if name == "" {
		return
	}
	if name[0] == '@' {
		name = "\x00" + name[1:]
	}
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: name, Net: "unixgram"})
	if err != nil {
		return
	}
	defer conn.Close()
	conn.Write([]byte(state))
}
