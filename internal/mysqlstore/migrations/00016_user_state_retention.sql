-- popup_user_state rows that no decision can use any more are removed (mysqlstore.StatePurger,
-- docs/CONTRACT.md §8 "Retention"); popup_state_purged keeps what results read from them.
--
-- * popup_state_purged: per popup, the users reached (state rows with an impression) whose rows
--   the purge removed, added in the transaction that removes them, so users_reached stays the
--   count of users the popup was ever shown to.

-- +goose Up
CREATE TABLE popup_state_purged (
    popup_id      BIGINT UNSIGNED NOT NULL,
    users_reached BIGINT UNSIGNED NOT NULL DEFAULT 0,
    updated_at    DATETIME(3)     NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    PRIMARY KEY (popup_id)
) ENGINE = InnoDB;

-- +goose Down
DROP TABLE popup_state_purged;
