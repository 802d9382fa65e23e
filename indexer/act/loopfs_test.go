package act

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/dupefs/dupefs/indexer"
	"github.com/dupefs/dupefs/store"
)

// fixture is an index over a tree on some file system.
type fixture struct {
	t    *testing.T
	root string
	db   *store.DB
}

func newFixture(t *testing.T, root string) *fixture {
	t.Helper()
	db, err := store.Open(context.Background(), store.Options{Path: filepath.Join(t.TempDir(), "index.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return &fixture{t: t, root: root, db: db}
}

func (fx *fixture) write(rel string, data []byte) string {
	fx.t.Helper()
	p := filepath.Join(fx.root, rel)
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		fx.t.Fatal(err)
	}
	return p
}

func (fx *fixture) index() {
	fx.t.Helper()
	ctx := context.Background()
	if _, _, err := fx.db.Files().AddRoot(ctx, store.RootSpec{Path: fx.root}, false); err != nil {
		fx.t.Fatal(err)
	}
	if err := indexer.New(indexer.IndexOf(fx.db), indexer.Config{Workers: 2}).Run(ctx); err != nil {
		fx.t.Fatal(err)
	}
}

// plan plans sel and records it as owner's plan; it returns the plan's
// id and what the store refused.
func (fx *fixture) plan(sel Selection, owner string) (int64, store.PlanResult) {
	fx.t.Helper()
	ctx := context.Background()
	roots, _ := fx.db.Files().Roots(ctx)
	specs, _, err := Plan(ctx, GroupsOf(fx.db), sel, roots)
	if err != nil {
		fx.t.Fatal(err)
	}
	res, err := fx.db.Ledger().CreatePlan(ctx, store.PlanSpec{Op: sel.Op, Worker: owner, LeaseTTL: store.DefaultLeaseTTL,
		UID: os.Getuid()}, specs)
	if err != nil {
		fx.t.Fatal(err)
	}
	return res.ID, res
}

// act plans sel and runs it; it returns the plan's id.
func (fx *fixture) act(sel Selection, cfg Config) (int64, *Progress) {
	fx.t.Helper()
	r := fx.runner(cfg)
	id, _ := fx.plan(sel, r.Owner())
	if err := r.Run(context.Background(), id); err != nil {
		fx.t.Fatal(err)
	}
	return id, r.cfg.Progress
}

// runner is a runner on the fixture's root, as test/1 unless cfg says.
func (fx *fixture) runner(cfg Config) *Runner {
	cfg.Roots = []string{fx.root}
	if cfg.Owner == "" {
		cfg.Owner = "test/1"
	}
	if cfg.UID == 0 {
		cfg.UID = os.Getuid()
	}
	return NewRunner(IndexOf(fx.db), cfg)
}

// groups counts the index's duplicate groups.
func (fx *fixture) groups() int64 {
	fx.t.Helper()
	t, err := fx.db.Totals(context.Background())
	if err != nil {
		fx.t.Fatal(err)
	}
	return t.Groups
}

func stat(t *testing.T, p string) unix.Stat_t {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

// firstExtent is the physical offset of a file's first extent (FIEMAP):
// files that share storage share it.
func firstExtent(t *testing.T, p string) uint64 {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const fsIocFiemap = 0xC020660B
	// struct fiemap (32 bytes) and one struct fiemap_extent (56 bytes).
	var buf [32 + 56]byte
	le := func(off int, v uint64, n int) {
		for i := 0; i < n; i++ {
			buf[off+i] = byte(v >> (8 * i))
		}
	}
	le(0, 0, 8)          // fm_start
	le(8, ^uint64(0), 8) // fm_length
	le(16, 1, 4)         // fm_flags: FIEMAP_FLAG_SYNC
	le(24, 1, 4)         // fm_extent_count
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, f.Fd(), fsIocFiemap, uintptr(unsafe.Pointer(&buf[0]))); errno != 0 {
		t.Fatalf("FIEMAP %s: %v", p, errno)
	}
	var phys uint64
	for i := 0; i < 8; i++ {
		phys |= uint64(buf[32+8+i]) << (8 * i)
	}
	return phys
}
