package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/trueup-dev/trueup/internal/manifest"
)

// AppliedSpecs returns, by key, the applied spec of each resource of rs that source holds
// with another spec hash: what transition rules compare a revision's specs with. Resources
// new to the source, unchanged, or being deleted (a restored manifest starts over) are left
// out. One query, whatever the number of resources.
// Applied is a resource's applied spec; Sealed and File are set when the spec holds markers
// of SOPS-encrypted fields (internal/sealed reveals them).
type Applied struct {
	Spec   json.RawMessage
	Sealed string
	File   string
}

func (s *Store) AppliedSpecs(ctx context.Context, source string, rs []manifest.Resource) (map[manifest.ResourceKey]Applied, error) {
	if len(rs) == 0 {
		return nil, nil
	}
	ns, kind, name, hash := make([]string, len(rs)), make([]string, len(rs)), make([]string, len(rs)), make([]string, len(rs))
	for i, r := range rs {
		ns[i], kind[i], name[i], hash[i] = r.Namespace, r.Kind, r.Name, r.SpecHash
	}
	rows, err := s.pool.Query(ctx, `
		SELECT x.ns, x.kind, x.name, r.spec, COALESCE(f.content, ''), r.file_path
		FROM unnest($2::text[], $3::text[], $4::text[], $5::text[]) AS x(ns, kind, name, sh)
		JOIN resources r ON r.namespace = x.ns AND lower(r.kind) = lower(x.kind) AND r.name = x.name
		LEFT JOIN sealed_files f ON f.sha256 = r.sealed_sha
		WHERE r.source = $1 AND r.spec_hash <> x.sh AND r.deletion_timestamp IS NULL`,
		source, ns, kind, name, hash)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[manifest.ResourceKey]Applied{}
	for rows.Next() {
		var k manifest.ResourceKey
		var a Applied
		if err := rows.Scan(&k.Namespace, &k.Kind, &k.Name, &a.Spec, &a.Sealed, &a.File); err != nil {
			return nil, err
		}
		out[k] = a
	}
	return out, rows.Err()
}

// SealedFile returns the content of the encrypted manifest file sha names.
func (s *Store) SealedFile(ctx context.Context, sha string) (string, error) {
	var content string
	err := s.pool.QueryRow(ctx, `SELECT content FROM sealed_files WHERE sha256 = $1`, sha).Scan(&content)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", fmt.Errorf("encrypted file %s: %w", sha, ErrNotFound)
	}
	return content, err
}
