package migrations

import "embed"

// FS holds every migration file, named NNNN_name.sql.
//
//go:embed *.sql
var FS embed.FS
