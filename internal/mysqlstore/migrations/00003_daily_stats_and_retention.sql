-- Operators' results, and the indexes that keep reading them and purging the raw log cheap.
-- Each table changes in one statement (MySQL and MariaDB commit DDL implicitly).
--
-- * popup_action_log.batch_id: the worker writes every batch with a fresh random id. A row the
--   batch newly inserted carries it; a duplicate (uid, event_id) keeps its old row and its old id.
--   So, inside the batch's transaction, the batch's keys whose row carries its id are exactly the
--   events the log newly accepted, and only those are added to the daily counters: a batch
--   written again after a crash (committed, acknowledgement lost) adds nothing. Rows written
--   before this migration hold 0. No index: the worker finds its rows by their (uid, event_id)
--   key, and only when some of a batch's events were already known. Adding a column with a
--   default at the end is an instant change on both servers, however long the log.
-- * popup_daily_stats: per popup and UTC day, the events the action log accepted. Kept forever
--   (the raw log is purged after POPUP_ACTION_LOG_RETENTION); filled from the existing log here,
--   then kept up by the worker in the transaction that writes the log.
-- * popup_user_state (popup_id, impressions): "users reached" counts a popup's users with
--   impressions > 0 as a range of this index, not a scan of the table.
--
-- The raw log's retention purge needs no new index: it deletes a popup's oldest rows along the
-- existing (popup_id, event_at) index.

-- +goose Up
ALTER TABLE popup_action_log
    ADD COLUMN batch_id BIGINT UNSIGNED NOT NULL DEFAULT 0 COMMENT 'random id of the worker batch that inserted the row';

CREATE TABLE popup_daily_stats (
    popup_id    BIGINT UNSIGNED NOT NULL,
    day         DATE            NOT NULL COMMENT 'UTC day of the event time',
    impressions BIGINT UNSIGNED NOT NULL DEFAULT 0,
    clicks      BIGINT UNSIGNED NOT NULL DEFAULT 0,
    closes      BIGINT UNSIGNED NOT NULL DEFAULT 0,
    updated_at  DATETIME(3)     NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    -- one popup's days: the popup stats endpoint
    PRIMARY KEY (popup_id, day),
    -- every popup's days of a range: the all-popups stats endpoint
    KEY idx_popup_daily_stats_day (day)
) ENGINE = InnoDB;

INSERT INTO popup_daily_stats (popup_id, day, impressions, clicks, closes)
SELECT popup_id, DATE(event_at), SUM(action = 'impression'), SUM(action = 'click'), SUM(action = 'close')
FROM popup_action_log
GROUP BY popup_id, DATE(event_at);

ALTER TABLE popup_user_state
    ADD KEY idx_popup_user_state_popup_impressions (popup_id, impressions);

-- +goose Down
ALTER TABLE popup_user_state
    DROP KEY idx_popup_user_state_popup_impressions;

DROP TABLE popup_daily_stats;

ALTER TABLE popup_action_log
    DROP COLUMN batch_id;
