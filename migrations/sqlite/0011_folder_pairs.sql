-- 0011: pairs of folders that overlap in part, kept as the exact folder
-- groups are, for the mounted view's /overlap and the folder report at its
-- default similarity (half).
--
-- folder_pairs holds every pair of folders at least half alike that the
-- overlap search proposes (neither inside the other, not of equal
-- content), the pairs the report hides included: whether a pair is hidden
-- depends on the pairs above it. a_id's path sorts before b_id's. state:
--   0  gone (the row keeps its id for when the pair comes back)
--   1  a pair the report does not show (restated above, or alike at 100%
--      with contents not all known)
--   2  shown
-- label is the view's name of a pair shown now or last, before any ~<id>;
-- counts and bytes are those the report prints. A change of what the view
-- shows moves change_seq on (counter pair_seq).
CREATE TABLE folder_pairs (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    a_id         INTEGER NOT NULL,
    b_id         INTEGER NOT NULL,
    state        INTEGER NOT NULL CHECK (state IN (0, 1, 2)),
    shared_files INTEGER NOT NULL,
    union_files  INTEGER NOT NULL,
    shared_bytes INTEGER NOT NULL DEFAULT 0,
    only_a       INTEGER NOT NULL DEFAULT 0,
    only_b       INTEGER NOT NULL DEFAULT 0,
    label        TEXT    NOT NULL DEFAULT '',
    changed_at   INTEGER NOT NULL,
    change_seq   INTEGER NOT NULL,
    UNIQUE (a_id, b_id)
);
CREATE INDEX folder_pairs_b ON folder_pairs (b_id);
CREATE INDEX folder_pairs_label ON folder_pairs (label, id) WHERE state = 2;
CREATE INDEX folder_pairs_change ON folder_pairs (change_seq);

-- The files only one folder of a shown pair holds (side 0: a, 1: b), in
-- the order of their paths relative to it (id order), each with the name
-- the view shows it under.
CREATE TABLE folder_pair_files (
    id      INTEGER PRIMARY KEY AUTOINCREMENT,
    pair_id INTEGER NOT NULL REFERENCES folder_pairs (id) ON DELETE CASCADE,
    side    INTEGER NOT NULL CHECK (side IN (0, 1)),
    file_id INTEGER NOT NULL,
    name    TEXT    NOT NULL,
    UNIQUE (pair_id, side, name)
);
CREATE INDEX folder_pair_files_list ON folder_pair_files (pair_id, side, id);

-- The overlap search reads folders by file count: a large folder's
-- partners have between half and twice its files. (Partial from 16 files:
-- the queries of every folder, which ask for tree_files > 0, do not take it.)
CREATE INDEX folders_files ON folders (tree_files) WHERE tree_files >= 16 AND missing = 0;

-- The view tells apart folder groups of one label by the groups whose
-- folders have that name.
CREATE INDEX folder_group_members_byname ON folder_group_members (name, group_id);

INSERT INTO counters (name, value) VALUES ('pair_seq', 0);
-- -1: no pair was ever stored; the next fold finds them all.
INSERT INTO counters (name, value) VALUES ('folder_pairs_at', -1);
