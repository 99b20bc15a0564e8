package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/trueup-dev/trueup/internal/clip"
)

// Preview is the latest preview of one pull (merge) request of a source (migration 0014).
// Result is a preview.Result as JSON.
type Preview struct {
	Source       string
	Number       int
	Provider     string
	Title        string
	URL          string
	HeadSHA      string
	BaseRevision string
	State        string // Pending | Running | Succeeded | Failed | Error
	Message      string
	Result       json.RawMessage
	CommentID    string
	CommentURL   string
	Replica      string // the replica that wrote the row last
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// Preview states.
const (
	PreviewPending   = "Pending"
	PreviewRunning   = "Running"
	PreviewSucceeded = "Succeeded" // valid; the result lists what would change
	PreviewFailed    = "Failed"    // invalid: the result lists the errors
	PreviewError     = "Error"     // could not be previewed (fetch failed, …): Message says why
)

const previewColumns = `source, number, provider, title, url, head_sha, base_revision, state, message, result,
	comment_id, comment_url, replica, created_at, updated_at`

func scanPreview(row pgx.CollectableRow) (Preview, error) {
	var p Preview
	err := row.Scan(&p.Source, &p.Number, &p.Provider, &p.Title, &p.URL, &p.HeadSHA, &p.BaseRevision, &p.State, &p.Message,
		&p.Result, &p.CommentID, &p.CommentURL, &p.Replica, &p.CreatedAt, &p.UpdatedAt)
	return p, err
}

// SavePreview writes p (keyed by source and number) and returns it as stored. The comment's
// id and URL are kept when p leaves them empty: they are found once and edited ever after.
func (s *Store) SavePreview(ctx context.Context, p Preview) (Preview, error) {
	if len(p.Result) == 0 {
		p.Result = json.RawMessage(`{}`)
	}
	rows, err := s.pool.Query(ctx, `INSERT INTO previews (source, number, provider, title, url, head_sha, base_revision, state, message,
		  result, comment_id, comment_url, replica)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10::jsonb, $11, $12, $13)
		ON CONFLICT (source, number) DO UPDATE SET provider = EXCLUDED.provider, title = EXCLUDED.title, url = EXCLUDED.url,
		  head_sha = EXCLUDED.head_sha, base_revision = EXCLUDED.base_revision, state = EXCLUDED.state, message = EXCLUDED.message,
		  result = EXCLUDED.result, replica = EXCLUDED.replica,
		  comment_id = COALESCE(NULLIF(EXCLUDED.comment_id, ''), previews.comment_id),
		  comment_url = COALESCE(NULLIF(EXCLUDED.comment_url, ''), previews.comment_url),
		  updated_at = now()
		RETURNING `+previewColumns,
		p.Source, p.Number, p.Provider, clip.Storable(p.Title, 1024), clip.Storable(p.URL, 4096), p.HeadSHA, p.BaseRevision, p.State, clip.Storable(p.Message, 2000),
		string(storableJSON(p.Result)), p.CommentID, p.CommentURL, p.Replica)
	if err != nil {
		return Preview{}, fmt.Errorf("save preview: %w", err)
	}
	out, err := pgx.CollectExactlyOneRow(rows, scanPreview)
	if err != nil {
		return Preview{}, fmt.Errorf("save preview: %w", err)
	}
	return out, nil
}

// GetPreview returns the preview of pull request number of source (ErrNotFound when none).
func (s *Store) GetPreview(ctx context.Context, source string, number int) (Preview, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+previewColumns+` FROM previews WHERE source = $1 AND number = $2`, source, number)
	if err != nil {
		return Preview{}, fmt.Errorf("read preview: %w", err)
	}
	p, err := pgx.CollectExactlyOneRow(rows, scanPreview)
	if errors.Is(err, pgx.ErrNoRows) {
		return Preview{}, ErrNotFound
	}
	if err != nil {
		return Preview{}, fmt.Errorf("read preview: %w", err)
	}
	return p, nil
}

// ListPreviews returns a source's previews, most recently updated first, without their
// results (limit bounds them; 0 means 100).
func (s *Store) ListPreviews(ctx context.Context, source string, limit int) ([]Preview, error) {
	if limit <= 0 {
		limit = 100
	}
	rows, err := s.pool.Query(ctx, `SELECT source, number, provider, title, url, head_sha, base_revision, state, message,
		  jsonb_build_object('counts', result->'counts'), comment_id, comment_url, replica, created_at, updated_at
		FROM previews WHERE source = $1 ORDER BY updated_at DESC LIMIT $2`, source, limit)
	if err != nil {
		return nil, fmt.Errorf("list previews: %w", err)
	}
	ps, err := pgx.CollectRows(rows, scanPreview)
	if err != nil {
		return nil, fmt.Errorf("list previews: %w", err)
	}
	return ps, nil
}

// InterruptPreviews marks Error, with message, the previews of source left Running by a
// replica that is gone (its liveness lock is free, or it recorded none) and returns them as
// stored: their commit status is pending on the forge and nothing will finish them. A
// preview a live replica is running is left alone.
func (s *Store) InterruptPreviews(ctx context.Context, source, message string) ([]Preview, error) {
	rows, err := s.pool.Query(ctx, `UPDATE previews p SET state = $3, message = $4, updated_at = now()
		WHERE p.source = $2 AND p.state = $5 AND NOT EXISTS (
		  SELECT 1 FROM replicas r WHERE r.name = p.replica AND r.liveness_key IS NOT NULL
		    AND EXISTS (`+lockHeldSQL("r.liveness_key")+`))
		RETURNING `+previewColumns, livenessClass, source, PreviewError, clip.Storable(message, 2000), PreviewRunning)
	if err != nil {
		return nil, fmt.Errorf("interrupt previews of %s: %w", source, err)
	}
	out, err := pgx.CollectRows(rows, scanPreview)
	if err != nil {
		return nil, fmt.Errorf("interrupt previews of %s: %w", source, err)
	}
	return out, nil
}
