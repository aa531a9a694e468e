-- Experiment results per day of the team's reporting time zone (docs/CONTRACT.md §10 "Results"),
-- as the popup's own results are (migration 00008).
--
-- * popup_experiment_slot: per popup, phase salt, arm and UTC quarter hour, the counts
--   popup_experiment_daily kept per UTC day: `exposed_users` and `clicked_users` the users whose
--   first exposure, or first click, in the phase fell in that quarter hour, and the quarter
--   hour's exposures, clicks and closes. Every UTC offset in use is a multiple of 15 minutes, so
--   any zone's day is a whole number of quarter hours: a day's rows are sums of these, and a
--   user's first exposure falls in exactly one quarter hour, so a zone's days still sum to the
--   phase's unique users. Kept by the worker in the transaction that writes the action log, with
--   the same newly-accepted-only rule, from this migration on.
-- * popup_experiment_daily is no longer written. Its rows, UTC days of events written before this
--   migration, cannot be split into quarter hours: they are kept and answered as they are, as UTC
--   days (summed with the quarter hours when the days asked are UTC days). The UTC day the
--   migration ran on is thus in both tables, each with its own events: nothing is counted twice.
--   popup_experiment_user (first exposure and first click times) is unchanged.

-- +goose Up
CREATE TABLE popup_experiment_slot (
    popup_id      BIGINT UNSIGNED NOT NULL,
    salt          VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    arm           VARCHAR(16) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    slot_start    DATETIME        NOT NULL COMMENT 'UTC start of the quarter hour',
    exposed_users BIGINT UNSIGNED NOT NULL DEFAULT 0,
    exposures     BIGINT UNSIGNED NOT NULL DEFAULT 0,
    clicked_users BIGINT UNSIGNED NOT NULL DEFAULT 0,
    clicks        BIGINT UNSIGNED NOT NULL DEFAULT 0,
    closes        BIGINT UNSIGNED NOT NULL DEFAULT 0,
    updated_at    DATETIME(3)     NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    PRIMARY KEY (popup_id, salt, arm, slot_start)
) ENGINE = InnoDB;

-- +goose Down
-- The quarter hours written since go back into UTC days, exactly: a quarter hour lies in one UTC
-- day.
INSERT INTO popup_experiment_daily (popup_id, salt, arm, day, exposed_users, exposures, clicked_users, clicks, closes)
SELECT popup_id, salt, arm, DATE(slot_start), SUM(exposed_users), SUM(exposures), SUM(clicked_users), SUM(clicks), SUM(closes)
FROM popup_experiment_slot
GROUP BY popup_id, salt, arm, DATE(slot_start)
ON DUPLICATE KEY UPDATE
    exposed_users = popup_experiment_daily.exposed_users + VALUES(exposed_users),
    exposures = popup_experiment_daily.exposures + VALUES(exposures),
    clicked_users = popup_experiment_daily.clicked_users + VALUES(clicked_users),
    clicks = popup_experiment_daily.clicks + VALUES(clicks),
    closes = popup_experiment_daily.closes + VALUES(closes);

DROP TABLE popup_experiment_slot;
