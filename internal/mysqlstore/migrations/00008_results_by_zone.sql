-- Results an operator can use: days in the team's reporting time zone, clicks per button, unique
-- users.
--
-- * popup_setting: the team's settings, one row per name (reporting_time_zone, an IANA name; no
--   row = the default, UTC). Who set it and when are kept with it.
-- * popup_action_log.button: for a click, the 0-based index of the button clicked; -1 when the
--   client did not say (every click before this migration, older clients) and for impressions and
--   closes. Added at the end with a default: an instant change on both servers.
-- * popup_action_log (popup_id, action, event_at, uid): unique users shown a popup over any
--   time range are a COUNT(DISTINCT uid) read from this index alone, for as long as the log keeps
--   the rows (POPUP_ACTION_LOG_RETENTION). Built online (in place, no lock on writes).
-- * popup_slot_stats: per popup, UTC quarter hour and button, the events the action log newly
--   accepted, kept by the worker in the transaction that writes the log, with the same
--   newly-accepted-only rule as popup_daily_stats, and kept forever. Every UTC offset in use is a
--   multiple of 15 minutes, so any zone's day is a whole number of quarter hours: results by the
--   reporting zone's days are sums of these rows. The row with button -1 holds the slot's
--   impressions, closes and the clicks that named no button ("unspecified"); a row with button
--   n >= 0 holds only clicks on button n. So SUM(impressions), SUM(clicks) and SUM(closes) over
--   all of a slot's rows are the slot's totals.
--
-- Filled here from the action log as it is now: slots before the oldest row the log still keeps
-- (its retention purge removed older rows) are missing or short. popup_daily_stats still holds
-- those days for UTC. The stats API tells which days it can answer exactly in a zone other than
-- UTC: a UTC day is complete in popup_slot_stats when its slot sums equal its popup_daily_stats
-- row (docs/CONTRACT.md §8).

-- +goose Up
CREATE TABLE popup_setting (
    name       VARCHAR(64)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    value      VARCHAR(255) NOT NULL,
    updated_at DATETIME(3)  NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    updated_by VARCHAR(64)  NOT NULL DEFAULT '' COMMENT 'the operator who set it',
    PRIMARY KEY (name)
) ENGINE = InnoDB;

-- Two statements: together, the column would be added by the index build's in-place rebuild of
-- the whole log instead of instantly.
ALTER TABLE popup_action_log
    ADD COLUMN button SMALLINT NOT NULL DEFAULT -1 COMMENT 'clicked button (0-based); -1 = unspecified or not a click';

ALTER TABLE popup_action_log
    ADD KEY idx_popup_action_log_popup_action_time_uid (popup_id, action, event_at, uid),
    ALGORITHM = INPLACE, LOCK = NONE;

CREATE TABLE popup_slot_stats (
    popup_id    BIGINT UNSIGNED NOT NULL,
    slot_start  DATETIME        NOT NULL COMMENT 'UTC start of the quarter hour of the event time',
    button      SMALLINT        NOT NULL DEFAULT -1 COMMENT '-1: impressions, closes, unspecified clicks; n >= 0: clicks on button n',
    impressions BIGINT UNSIGNED NOT NULL DEFAULT 0,
    clicks      BIGINT UNSIGNED NOT NULL DEFAULT 0,
    closes      BIGINT UNSIGNED NOT NULL DEFAULT 0,
    updated_at  DATETIME(3)     NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    -- one popup's slots of a range: the popup stats endpoint
    PRIMARY KEY (popup_id, slot_start, button),
    -- every popup's slots of a range: the all-popups stats endpoint
    KEY idx_popup_slot_stats_slot (slot_start)
) ENGINE = InnoDB;

INSERT INTO popup_slot_stats (popup_id, slot_start, button, impressions, clicks, closes)
SELECT popup_id,
       TIMESTAMPADD(MINUTE, TIMESTAMPDIFF(MINUTE, '1970-01-01 00:00:00', event_at) DIV 15 * 15, '1970-01-01 00:00:00'),
       -1, SUM(action = 'impression'), SUM(action = 'click'), SUM(action = 'close')
FROM popup_action_log
GROUP BY popup_id, TIMESTAMPDIFF(MINUTE, '1970-01-01 00:00:00', event_at) DIV 15;

-- +goose Down
DROP TABLE popup_slot_stats;

ALTER TABLE popup_action_log
    DROP KEY idx_popup_action_log_popup_action_time_uid;

ALTER TABLE popup_action_log
    DROP COLUMN button;

DROP TABLE popup_setting;
