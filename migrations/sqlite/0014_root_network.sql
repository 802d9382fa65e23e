-- 0014: a root may include network file systems, read-only: roots.network
-- is 1 when the user asked for it (root add --network). Files there are
-- indexed and shown; no action keeps or touches one.
ALTER TABLE roots ADD COLUMN network INTEGER NOT NULL DEFAULT 0 CHECK (network IN (0, 1));
