// Package migrations owns the schema of the dupefs index: numbered
// NNNN_name.sql files, embedded so the binary carries them, one set per
// engine (sqlite/ and postgres/, each numbered from 0001). A file is never
// edited once it has landed; a change to the schema is a new file. The
// checksum of every landed file of either set is pinned by a test in package store
// (store/migrate_test.go), and an index made by a release is kept there as
// test data and upgraded. The store package applies the files in order, each
// in its own transaction, and records every version it applied in
// schema_migrations.
package migrations
