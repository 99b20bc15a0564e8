package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// PublishPreviewComment calls publish with the forge comment id stored for pull request
// number of source ("" when none yet) and stores the id and URL it returns. The preview's
// row is locked meanwhile, so that two replicas previewing one pull request (a redelivered
// webhook each received) never both create a comment: the second finds the first's id and
// edits. publish runs inside the transaction; it must be bounded by a timeout. The row must
// exist (SavePreview first): ErrNotFound otherwise.
func (s *Store) PublishPreviewComment(ctx context.Context, source string, number int,
	publish func(ctx context.Context, commentID string) (id, url string, err error)) error {
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var id string
		err := tx.QueryRow(ctx, `SELECT comment_id FROM previews WHERE source = $1 AND number = $2 FOR UPDATE`, source, number).Scan(&id)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		newID, url, err := publish(ctx, id)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE previews SET comment_id = COALESCE(NULLIF($3, ''), comment_id),
			comment_url = COALESCE(NULLIF($4, ''), comment_url) WHERE source = $1 AND number = $2`, source, number, newID, url)
		return err
	})
	if err != nil {
		return fmt.Errorf("publish preview comment of %s #%d: %w", source, number, err)
	}
	return nil
}
