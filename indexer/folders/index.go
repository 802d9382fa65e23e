package folders

import (
	"context"

	"github.com/dupefs/dupefs/store"
)

// Index is what the folder report and the folder check read of the index
// (*store.Folders has it): the exact folder groups, the partial pairs
// (kept, or searched for), and the contents of a subtree.
type Index interface {
	FindPartialPairs(ctx context.Context, min float64, minBytes int64) ([]store.PartialPair, int, int, error)
	KeptPairs(ctx context.Context) ([]store.PartialPair, bool, error)
	PairOnlyPaths(ctx context.Context, pairID int64, side, limit int) ([]string, error)
	FolderNodeByPath(ctx context.Context, path string) (store.FolderNode, error)
	FolderGroups(ctx context.Context, minBytes int64) ([]store.FolderGroup, error)
	ExactFolderGroups(ctx context.Context, layout bool, minBytes int64) ([]store.FolderGroup, error)
	SubtreeContents(ctx context.Context, dir string) ([]store.SubtreeFile, bool, error)
	SubtreeContentsOn(ctx context.Context, host int64, dir string) ([]store.SubtreeFile, bool, error)
	HashAlgo() string
}

var _ Index = (*store.Folders)(nil)
