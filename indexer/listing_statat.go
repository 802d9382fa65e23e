//go:build amd64 || arm64 || riscv64 || s390x || ppc64 || ppc64le

package indexer

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// fstatatName is unix.Fstatat for a name of a scratch's arena, which a NUL
// follows already: without the copy unix.Fstatat makes of every name (an
// allocation per entry of a walk).
func fstatatName(dirfd int, name string, st *unix.Stat_t, flags int) error {
	_, _, errno := unix.Syscall6(unix.SYS_NEWFSTATAT, uintptr(dirfd), uintptr(unsafe.Pointer(unsafe.StringData(name))),
		uintptr(unsafe.Pointer(st)), uintptr(flags), 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}
