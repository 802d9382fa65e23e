package migrations

import (
	"embed"
	"io/fs"
)

//go:embed sqlite/*.sql postgres/*.sql
var all embed.FS

// FS holds the migrations of a SQLite index, named NNNN_name.sql.
var FS = sub("sqlite")

// Postgres holds the migrations of a PostgreSQL index, numbered on their
// own.
var Postgres = sub("postgres")

func sub(dir string) fs.FS {
	f, err := fs.Sub(all, dir)
	if err != nil {
		panic(err) // a folder named in the embed pattern above
	}
	return f
}
