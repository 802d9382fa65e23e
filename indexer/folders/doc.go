// Package folders owns the folder report (dupefs folders) and the folder
// half of dupefs check: the exact groups of duplicate folders, confirmed
// file by file, the pairs of folders that overlap in part, with what only
// one of them holds, and the answer to "do I already have this whole
// folder?". It reads the folder signatures the indexer keeps in store
// (store.UpdateFolderSigs folds changed folders in once the scans and
// hashes are done, and after a run of actions) and never writes the
// index, so it takes no lease.
//
// A folder's content is the multiset of the contents (size and full hash)
// of the non-empty regular files of its whole subtree; names and layout do
// not count unless the report is asked for them (Options.Layout), and a
// folder with two copies of a file differs from one with a single copy.
// Two folders are an exact group when their contents are equal. Of folders
// nested in one another only the highest is named, and a group whose
// folders' parents all lie in one group is not reported: only the highest
// level of a duplicated tree is, so a copied project shows once, not once
// per subfolder. The store finds the groups by signature and confirms them
// by comparing the sorted content lists, since sums can be made to
// collide: Build reads the groups the last fold confirmed or, with the
// layout, splits the groups of equal content by relative path, which
// confirms them.
//
// A partial pair is two folders, neither inside the other and not of equal
// content, whose similarity |A ∩ B| / |A ∪ B| (on content multisets) is at
// least Options.MinSimilarity (half by default) and below 1. A pair that
// only restates one above it is hidden: when some other pair (A', B') of A
// or a folder above it and B or a folder above it is an exact group or at
// least as alike, the report shows that one (a pair of subfolders more
// alike than every pair above it is kept). Pairs are found without
// comparing every folder with every other (store.Folders.FindPartialPairs):
// every content held directly by at most store.MaxSeedFolders folders
// proposes its folders as seed pairs, each seed is climbed to the pairs of
// ancestors below their common ancestor whose file counts allow the
// similarity, and only those candidates are measured. A content held by
// more folders still counts in the similarity of the pairs others propose.
// The index keeps the pairs at the default similarity, found again around
// the folders that change after every fold (store.Folders.KeptPairs): the
// report reads those when it is asked for them, and searches otherwise.
// Each pair reported lists, file by file, what only one side holds (the
// first ListLimit of each side).
//
// CheckDir checks every file of a folder against the index by content
// (indexer.Check), counting only copies outside the folder; when all have
// one, it looks among the folders holding a copy for those of equal
// content, the highest of nested ones.
//
// The files, by concern:
//
//	report.go    Build, Options, Report: the exact groups and the partial
//	             pairs from store, and what differs in each
//	checkdir.go  CheckDir, for dupefs check on a folder
//
// The tests check Build against an oracle (oracle_test.go) that applies
// the definitions above straight to the files on disk, comparing every
// pair of folders, on hand-made cases and random trees.
package folders
