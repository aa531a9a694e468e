-- The action log partitioned by the UTC day of its event time, so that retention drops whole days
-- (ALTER TABLE ... DROP PARTITION: a file removed, whatever the day's size) instead of deleting
-- rows (docs/CONTRACT.md §8 "Retention"; docs/SCALING.md).
--
-- * Every unique key must hold the partitioning column, so the de-duplication key becomes
--   (uid, event_id, event_at) and the primary key (id, event_at). An event's time is fixed when
--   the API queues it, so a batch the worker writes again carries the same times, falls on the
--   same days, and is still recognised row by row: a redelivery counts once, as before. What
--   changes: a client that sends an action again after its Redis marker has expired (24 hours)
--   makes a new event with a new time, which the log accepted as a repeat before (while the row
--   lived) and now accepts as new.
-- * One partition per UTC day, from the oldest row the log holds (the first partition also takes
--   everything before its day) to seven days ahead, then pmax: the rows copied here and by the
--   backfill land in their own days. popup-worker keeps seven days ahead from then on by
--   splitting pmax, which no row reaches, so a split moves nothing, and drops the days past the
--   retention (mysqlstore.LogPartitions). The oldest row is found by a loose scan of the
--   (popup_id, event_at) index, one entry per popup.
-- * Safe on a large live table: nothing here copies the old table whole. The new table takes the
--   old one's name in one atomic RENAME; the old one stays as popup_action_log_unpartitioned, and
--   popup-worker copies the rows the retention still keeps into the new table in small paced
--   batches, newest first, then drops it (mysqlstore.LogPartitions.Backfill). Before the rename
--   this migration copies the newest 100,000 rows: a batch a worker wrote but had not yet
--   acknowledged when it died (the only rows a worker writes again) is among the newest, so its
--   redelivery meets its rows in the new table and counts once. Until the backfill is done,
--   unique users of the days before the upgrade read low; counts never read the log.

-- +goose Up
-- (A run that failed half-way left its new table behind: start again from nothing.)
DROP TABLE IF EXISTS popup_action_log_by_day;

-- MySQL's GROUP_CONCAT stops at 1,024 bytes unless told otherwise: ten days' partitions.
SET SESSION group_concat_max_len = 1048576;

SET @first = COALESCE((SELECT DATE(MIN(m)) FROM (SELECT MIN(event_at) AS m FROM popup_action_log GROUP BY popup_id) AS oldest), UTC_DATE());

SET @first = GREATEST(@first, UTC_DATE() - INTERVAL 1000 DAY);

SET @days = (WITH RECURSIVE d (n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM d WHERE n < DATEDIFF(UTC_DATE() + INTERVAL 7 DAY, @first))
    SELECT GROUP_CONCAT(CONCAT('PARTITION p', DATE_FORMAT(@first + INTERVAL n DAY, '%Y%m%d'),
        ' VALUES LESS THAN (', TO_DAYS(@first + INTERVAL n + 1 DAY), ')') ORDER BY n SEPARATOR ', ') FROM d);

SET @ddl = CONCAT('CREATE TABLE popup_action_log_by_day (
    id          BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
    event_id    VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    uid         VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    popup_id    BIGINT UNSIGNED NOT NULL,
    action      VARCHAR(16)     NOT NULL COMMENT ''impression, click, close or exposure'',
    event_at    DATETIME(3)     NOT NULL,
    decision_id VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '''',
    created_at  DATETIME(3)     NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    batch_id    BIGINT UNSIGNED NOT NULL DEFAULT 0 COMMENT ''random id of the worker batch that inserted the row'',
    button      SMALLINT        NOT NULL DEFAULT -1 COMMENT ''clicked button (0-based); -1 = unspecified or not a click'',
    PRIMARY KEY (id, event_at),
    UNIQUE KEY uk_popup_action_log_uid_event (uid, event_id, event_at),
    KEY idx_popup_action_log_uid_time (uid, event_at),
    KEY idx_popup_action_log_popup_time (popup_id, event_at),
    KEY idx_popup_action_log_popup_action_time_uid (popup_id, action, event_at, uid)
) ENGINE = InnoDB
PARTITION BY RANGE (TO_DAYS(event_at)) (', @days, ', PARTITION pmax VALUES LESS THAN MAXVALUE)');

PREPARE create_log FROM @ddl;

EXECUTE create_log;

DEALLOCATE PREPARE create_log;

INSERT INTO popup_action_log_by_day (event_id, uid, popup_id, action, event_at, decision_id, created_at, batch_id, button)
SELECT event_id, uid, popup_id, action, event_at, decision_id, created_at, batch_id, button
FROM popup_action_log
WHERE id > (SELECT COALESCE(MAX(id), 0) FROM popup_action_log) - 100000;

RENAME TABLE popup_action_log TO popup_action_log_unpartitioned,
             popup_action_log_by_day TO popup_action_log;

-- +goose Down
-- Back to one table, nothing lost: the rows not yet copied are still in
-- popup_action_log_unpartitioned (made again, empty, when the copy had finished), and the
-- partitioned table's rows go back into it.
CREATE TABLE IF NOT EXISTS popup_action_log_unpartitioned (
    id          BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
    event_id    VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    uid         VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    popup_id    BIGINT UNSIGNED NOT NULL,
    action      VARCHAR(16)     NOT NULL COMMENT 'impression, click or close',
    event_at    DATETIME(3)     NOT NULL,
    decision_id VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '',
    created_at  DATETIME(3)     NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    batch_id    BIGINT UNSIGNED NOT NULL DEFAULT 0 COMMENT 'random id of the worker batch that inserted the row',
    button      SMALLINT        NOT NULL DEFAULT -1 COMMENT 'clicked button (0-based); -1 = unspecified or not a click',
    PRIMARY KEY (id),
    UNIQUE KEY uk_popup_action_log_uid_event (uid, event_id),
    KEY idx_popup_action_log_uid_time (uid, event_at),
    KEY idx_popup_action_log_popup_time (popup_id, event_at),
    KEY idx_popup_action_log_popup_action_time_uid (popup_id, action, event_at, uid)
) ENGINE = InnoDB;

INSERT IGNORE INTO popup_action_log_unpartitioned (event_id, uid, popup_id, action, event_at, decision_id, created_at, batch_id, button)
SELECT event_id, uid, popup_id, action, event_at, decision_id, created_at, batch_id, button
FROM popup_action_log;

DROP TABLE popup_action_log;

RENAME TABLE popup_action_log_unpartitioned TO popup_action_log;
