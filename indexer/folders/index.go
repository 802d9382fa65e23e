package folders

import (
	"context"

	"github.com/dupefs/dupefs/store"
)

// Index is what the folder report and the folder check read of the index
// (*store.Folders has it): the folder tree with its signatures, the exact
// folder groups, and the contents of a subtree.
type Index interface {
	FolderNodes(ctx context.Context, fn func(store.FolderNode) error) error
	SharedFiles(ctx context.Context, fn func(store.SharedFile) error) error
	FolderNodeByPath(ctx context.Context, path string) (store.FolderNode, error)
	FolderGroups(ctx context.Context, minBytes int64) ([]store.FolderGroup, error)
	ExactFolderGroups(ctx context.Context, layout bool, minBytes int64) ([]store.FolderGroup, error)
	SubtreeContents(ctx context.Context, dir string) ([]store.SubtreeFile, bool, error)
	HashAlgo() string
}

var _ Index = (*store.Folders)(nil)
