// Package store owns every SQL statement of dupefs. It opens the index (one
// SQLite file in WAL mode) with a single writer connection, through which
// every write of the process goes, and a bounded pool of read-only
// connections, and copies the writer's WAL back into the file on a
// connection of its own (checkpoint.go); it applies the embedded
// migrations; and it offers typed
// queries for roots, folders and files, the job queue with its leases, the
// hash pipeline, duplicate groups and status, the thumbnail and cleanup jobs,
// the global I/O limiter and the WAL maintenance jobs, with keyset pagination
// for every listing.
//
// Writes of a worker are fenced by its job lease (see Lease and Tx.Fence):
// a worker that lost its lease changes nothing. Library code here never
// exits, never reads flags or the environment, and reports SQLite failures as
// errors wrapping ErrDiskFull, ErrCorrupt, ErrReadOnly or ErrBusy where they
// apply.
package store
