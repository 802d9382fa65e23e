package main

import (
	"maps"
	"testing"
)

// --remote-prefix takes HOST=PREFIX, PREFIX absolute, once a host; any
// other form is a usage error (exit 3).
func TestRemotePrefixes(t *testing.T) {
	got, err := remotePrefixes([]string{"nas=/mnt/nas/", "pi=/net/pi"})
	if err != nil || !maps.Equal(got, map[string]string{"nas": "/mnt/nas", "pi": "/net/pi"}) {
		t.Fatalf("got %v (%v)", got, err)
	}
	for _, bad := range [][]string{{"nas"}, {"=/mnt"}, {"nas=mnt"}, {"n:as=/mnt"}, {"nas=/a", "nas=/b"}} {
		if _, err := remotePrefixes(bad); err == nil || exitCode(err) != 3 {
			t.Errorf("%q: %v (exit %d), want a usage error", bad, err, exitCode(err))
		}
	}
}
