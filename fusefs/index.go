package fusefs

import (
	"context"
	"time"

	"github.com/dupefs/dupefs/store"
)

// Index is everything the view reads of the index: keyset pages of groups,
// sizes, copies and thumbnails, single rows by id or name, the change feeds
// and a watcher of commits. *store.View implements it; the view never writes.
type Index interface {
	// Groups, by content id and by size.
	GroupsPage(ctx context.Context, afterID int64, limit int) ([]store.GroupInfo, error)
	SizeGroupsPage(ctx context.Context, size, afterID int64, limit int) ([]store.GroupRef, error)
	SizesPage(ctx context.Context, afterSize int64, limit int) ([]store.SizeEntry, error)
	Group(ctx context.Context, algo string, sum []byte) (store.GroupInfo, error)
	GroupByID(ctx context.Context, id int64) (store.GroupInfo, error)
	SizeInfo(ctx context.Context, size int64) (time.Time, error)

	// Groups by rank (/files), and where their copies live.
	GroupCount(ctx context.Context) (int64, error)
	WastePage(ctx context.Context, after *store.WasteCursor, skip, limit int) ([]store.GroupInfo, error)
	CopyNames(ctx context.Context, ids []int64) (map[int64][]string, error)
	PlacesOf(ctx context.Context, ids []int64) (map[int64][]store.Place, error)

	// The copies of a group.
	CopiesPage(ctx context.Context, contentID, afterID int64, limit int) ([]store.MemberName, error)
	CopiesAhead(ctx context.Context, fromID int64, groups, limit int) ([]store.GroupCopies, error)
	MemberByName(ctx context.Context, g store.GroupRef, name string) (store.Member, error)
	MemberByID(ctx context.Context, g store.GroupRef, fileID int64) (store.Member, bool, error)
	FileByID(ctx context.Context, id int64) (store.Member, error)
	GroupPaths(ctx context.Context, contentID int64) ([]store.CopyAt, error)

	// Thumbnails.
	ReadyThumbsPage(ctx context.Context, afterID int64, limit int) ([]store.Thumb, error)
	ReadyThumb(ctx context.Context, algo string, sum []byte) (store.Thumb, error)
	ThumbByID(ctx context.Context, id int64) (store.Thumb, error)

	// Folder groups (/by-folder), named with the index's hash algorithm.
	HashAlgo() string
	FolderGroupsPage(ctx context.Context, afterID int64, limit int) ([]store.FolderGroupInfo, error)
	FolderGroupBySig(ctx context.Context, sig []byte) (store.FolderGroupInfo, error)
	FolderGroupByID(ctx context.Context, id int64) (store.FolderGroupInfo, error)
	FolderMembersPage(ctx context.Context, groupID, afterID int64, limit int) ([]store.FolderMember, error)
	FolderMemberByName(ctx context.Context, groupID int64, name string) (store.FolderMember, error)
	FolderMemberByID(ctx context.Context, groupID, folderID int64) (store.FolderMember, error)
	FolderMemberOf(ctx context.Context, folderID int64) (store.FolderMember, error)
	SubtreeContents(ctx context.Context, dir string) ([]store.SubtreeFile, bool, error)

	// The folders made for people: /folders (folder groups told apart by
	// their folders' names), /overlap (the pairs of folders that overlap
	// in part), the roots they name paths from.
	FolderGroupsNamed(ctx context.Context, files int64, name string, afterID, beforeID int64, limit int) ([]store.FolderGroupInfo, error)
	PairsPage(ctx context.Context, afterID int64, limit int) ([]store.FolderPairInfo, error)
	PairByID(ctx context.Context, id int64) (store.FolderPairInfo, error)
	PairsByLabel(ctx context.Context, label string, afterID, beforeID int64, limit int) ([]store.FolderPairInfo, error)
	PairFilesPage(ctx context.Context, pairID int64, side int, afterID int64, limit int) ([]store.PairFile, error)
	PairFileByName(ctx context.Context, pairID int64, side int, name string) (store.PairFile, error)
	PairFileByID(ctx context.Context, id int64) (store.PairFile, error)
	PairFileOf(ctx context.Context, pairID int64, side int, fileID int64) (store.PairFile, error)
	RootPaths(ctx context.Context) (map[int64]store.RootPath, error)

	// What changed, and when anything was committed.
	ChangesSince(ctx context.Context, seq int64, limit int) ([]store.Change, error)
	LastChange(ctx context.Context) (int64, time.Time, error)
	ThumbChangesSince(ctx context.Context, seq int64, limit int) ([]store.ThumbChange, error)
	LastThumbChange(ctx context.Context) (int64, time.Time, error)
	FolderChangesSince(ctx context.Context, seq int64, limit int) ([]store.FolderChange, error)
	LastFolderChange(ctx context.Context) (int64, time.Time, error)
	PairChangesSince(ctx context.Context, seq int64, limit int) ([]store.PairChange, error)
	LastPairChange(ctx context.Context) (int64, time.Time, error)
	NewWatcher(ctx context.Context) (*store.Watcher, error)
}

var _ Index = (*store.View)(nil)
