package main

import (
	"slices"
	"testing"
)

// mount(8)'s arguments become dupefs mount's: roots from the source and
// root=, the indexer's options as flags, the generic ones dropped.
func TestHelperArgsMapMountOptions(t *testing.T) {
	args := []string{"dupefs", "/home/u/Pictures:/srv/photos", "/mnt/dupes", "-o",
		"ro,dev,suid,noatime,x-systemd.automount,db=/var/lib/dupefs/index.db,root=/a:b,workers=2,io-depth=8,rotational=no,no-watch,log=/tmp/l"}
	var warned []string
	out, logFile, err := helperArgs(args, func(s string) { warned = append(warned, s) })
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"dupefs", "--db", "/var/lib/dupefs/index.db", "mount", "/mnt/dupes", "/home/u/Pictures", "/srv/photos", "/a:b",
		"--workers", "2", "--io-depth", "8", "--rotational", "no", "--no-watch"}
	if !slices.Equal(out, want) || logFile != "/tmp/l" || len(warned) != 0 {
		t.Errorf("helperArgs = %q, log %q, warnings %q;\nwant %q, log /tmp/l", out, logFile, warned, want)
	}
	if _, _, err := helperArgs([]string{"dupefs", "/x", "/m", "-o", "ro,bogus=1"}, func(string) {}); err == nil {
		t.Error("an unknown option: no error")
	}
}
