// Package migrations embeds the SQL migrations (NNNN_name.up.sql and .down.sql) that
// internal/store applies at start.
package migrations

import "embed"

// FS holds every migration file.
//
//go:embed *.sql
var FS embed.FS
