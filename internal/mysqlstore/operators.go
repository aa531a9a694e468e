package mysqlstore

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"fmt"
	"slices"
	"time"

	"popupsvc/internal/changelog"
	"popupsvc/internal/operator"
)

// OperatorLog keeps the operators of the last popup-api start (popup_operator) and records how
// each start's differ (popup_operator_change): the audit log's operators.
type OperatorLog struct{ db *sql.DB }

// NewOperatorLog returns the operator log over db.
func NewOperatorLog(db *sql.DB) *OperatorLog { return &OperatorLog{db: db} }

type storedOperator struct {
	role       string
	salt, hash []byte
}

// tokenHash is the SHA-256 of salt and token.
func tokenHash(salt []byte, token string) []byte {
	h := sha256.New()
	h.Write(salt)
	h.Write([]byte(token))
	return h.Sum(nil)
}

// operatorLock names the lock of Sync, per database (lockName).
const operatorLock = "popup_operator:"

// Sync records, in one transaction, how ops (the operators popup-api starts with:
// POPUP_ADMIN_TOKENS…) differ from the operators stored by the last start
// (added, removed, another role, another token), and stores ops in their place. Concurrent
// starts take turns under a named lock (an empty table has no row to lock); a start with the same
// operators records nothing.
func (l *OperatorLog) Sync(ctx context.Context, ops []operator.Operator, at time.Time) error {
	conn, err := l.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("record the operators: %w", err)
	}
	defer conn.Close()
	var got sql.NullInt64
	if err := conn.QueryRowContext(ctx, `SELECT GET_LOCK(`+lockName+`, 10)`, operatorLock).Scan(&got); err != nil || got.Int64 != 1 {
		return fmt.Errorf("record the operators: another start holds the lock (%v)", err)
	}
	defer func() {
		_, _ = conn.ExecContext(context.WithoutCancel(ctx), `DO RELEASE_LOCK(`+lockName+`)`, operatorLock)
	}()
	err = inTx(ctx, conn, func(tx *sql.Tx) error {
		stored, err := readOperators(ctx, tx)
		if err != nil {
			return err
		}
		record := func(name string, action changelog.OperatorChange, oldRole, newRole any) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO popup_operator_change (at, actor, name, action, old_role, new_role) VALUES (?, ?, ?, ?, ?, ?)`,
				toDB(at), changelog.ConfigurationActor, name, string(action), oldRole, newRole)
			return err
		}
		seen := map[string]bool{}
		for _, op := range ops {
			seen[op.Name] = true
			role := op.Role.String()
			was, ok := stored[op.Name]
			switch {
			case !ok:
				err = record(op.Name, changelog.OperatorAdded, nil, role)
			case was.role != role:
				err = record(op.Name, changelog.OperatorRole, was.role, role)
			}
			if err != nil {
				return err
			}
			sameToken := ok && bytes.Equal(tokenHash(was.salt, op.Token), was.hash)
			if ok && !sameToken {
				if err := record(op.Name, changelog.OperatorToken, nil, nil); err != nil {
					return err
				}
			}
			if sameToken && was.role == role {
				continue
			}
			salt := make([]byte, 16)
			if _, err := rand.Read(salt); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO popup_operator (name, role, token_salt, token_hash) VALUES (?, ?, ?, ?)
				ON DUPLICATE KEY UPDATE role = VALUES(role), token_salt = VALUES(token_salt), token_hash = VALUES(token_hash)`,
				op.Name, role, salt, tokenHash(salt, op.Token)); err != nil {
				return err
			}
		}
		names := make([]string, 0, len(stored))
		for name := range stored {
			if !seen[name] {
				names = append(names, name)
			}
		}
		slices.Sort(names)
		for _, name := range names {
			if err := record(name, changelog.OperatorRemoved, stored[name].role, nil); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `DELETE FROM popup_operator WHERE name = ?`, name); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("record the operators: %w", err)
	}
	return nil
}

func readOperators(ctx context.Context, tx *sql.Tx) (map[string]storedOperator, error) {
	rows, err := tx.QueryContext(ctx, `SELECT name, role, token_salt, token_hash FROM popup_operator`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]storedOperator{}
	for rows.Next() {
		var (
			name string
			op   storedOperator
		)
		if err := rows.Scan(&name, &op.role, &op.salt, &op.hash); err != nil {
			return nil, err
		}
		out[name] = op
	}
	return out, rows.Err()
}
