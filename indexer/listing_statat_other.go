//go:build !(amd64 || arm64 || riscv64 || s390x || ppc64 || ppc64le)

package indexer

import "golang.org/x/sys/unix"

// fstatatName is unix.Fstatat where the system call differs (fstatat64,
// or statx underneath).
func fstatatName(dirfd int, name string, st *unix.Stat_t, flags int) error {
	return unix.Fstatat(dirfd, name, st, flags)
}
