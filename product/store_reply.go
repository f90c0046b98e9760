package product

import (
	"context"
	"database/sql"
)

// turnReplies is what a user turn of a session was answered so far.
type turnReplies struct {
	Count int
	Final bool
	Needs []string // the needs answered, in order
}

// turnReplies reads the replies recorded for a turn.
func (s *store) turnReplies(ctx context.Context, sessionID, turnID string) (turnReplies, error) {
	type row struct {
		need  sql.NullString
		final int
	}
	rows, err := queryAll(ctx, s.db, "store.turn_replies",
		`SELECT need_id, final FROM replies WHERE session_id = ? AND turn_id = ? ORDER BY ordinal`, []any{sessionID, turnID},
		func(rs rowScanner, r *row) error { return rs.Scan(&r.need, &r.final) })
	if err != nil {
		return turnReplies{}, err
	}
	var t turnReplies
	for _, r := range rows {
		t.Count++
		t.Final = t.Final || r.final == 1
		if r.need.Valid {
			t.Needs = append(t.Needs, r.need.String)
		}
	}
	return t, nil
}

// putReply records a reply as the turn's next one.
func (s *store) putReply(ctx context.Context, sessionID, turnID string, r reply) error {
	return s.inTx(ctx, "store.reply", func(tx *sql.Tx, now string) error {
		var need, step any
		if r.Result != nil {
			need, step = r.Result.NeedID, r.Result.Step.Ordinal
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO replies (session_id, turn_id, ordinal, kind, need_id, step_ordinal, final, text_digest, created_at)
			SELECT ?, ?, coalesce(max(ordinal), 0) + 1, ?, ?, ?, ?, ?, ? FROM replies WHERE session_id = ? AND turn_id = ?`,
			sessionID, turnID, string(r.Kind), need, step, boolInt(r.Final), mustID(tagReply, r.Text), now, sessionID, turnID)
		return err
	})
}
