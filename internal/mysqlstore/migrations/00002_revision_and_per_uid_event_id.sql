-- Two changes, each one ALTER so that each table changes atomically (MySQL and MariaDB commit DDL
-- implicitly, so a migration that stopped half-way could not be re-run):
--
-- * popup_config.revision: the popup's optimistic-locking counter. The admin API sends it as the
--   ETag of every read and write and checks If-Match against it in the UPDATE itself; every write
--   increments it. Existing rows start at 1.
-- * popup_action_log: an event_id is the client's key for one uid, not a global one. Two users
--   may send the same event_id (a device counter, say) and both actions count, so the unique key
--   becomes (uid, event_id). Rows of a database at version 1 satisfy it already: a globally
--   unique event_id is unique per uid.

-- +goose Up
ALTER TABLE popup_config
    ADD COLUMN revision BIGINT UNSIGNED NOT NULL DEFAULT 1 AFTER updated_at;

ALTER TABLE popup_action_log
    ADD UNIQUE KEY uk_popup_action_log_uid_event (uid, event_id),
    DROP KEY uk_popup_action_log_event;

-- +goose Down
-- Fails, on purpose, once two uids share an event_id: going back would have to drop one of them.
ALTER TABLE popup_action_log
    ADD UNIQUE KEY uk_popup_action_log_event (event_id),
    DROP KEY uk_popup_action_log_uid_event;

ALTER TABLE popup_config
    DROP COLUMN revision;
