-- Experiment results per user (docs/CONTRACT.md §10 "Results"), kept by the worker in the
-- transaction that writes the action log, counting only the events the log newly accepted (the
-- popup_daily_stats rule of migration 00003).
--
-- * popup_action_log.action takes `exposure` (a control user's would-be impression) as it is:
--   the column is VARCHAR(16) with no list of values, so the log, the largest table, is not
--   altered. Exposures are not impressions: popup_daily_stats and popup_slot_stats never count
--   them.
-- * popup_experiment_user: one row per popup, phase salt and user exposed in that phase, made
--   by the user's first exposure (an impression of a variant, or a control exposure). `arm` is the
--   arm of that first exposure, and every later event of the user in the phase counts for it.
--   Clicks and closes count only for a user who has a row. `first_click_at` is NULL until the
--   user's first click. `batch_id` and `click_batch_id` carry the random id of the worker batch
--   that inserted the row and that set first_click_at: inside the batch's transaction, the rows
--   carrying its id are the users it newly exposed, or whose first click it saw (the action log's
--   batch_id trick).
-- * popup_experiment_daily: per popup, salt, arm and UTC day: `exposed_users` and
--   `clicked_users` are the users first exposed, or first clicking, that day (so the days sum to
--   the phase's unique users), `exposures`, `clicks` and `closes` the events of that day. The
--   results endpoint reads one phase's rows by the primary key's prefix.

-- +goose Up
CREATE TABLE popup_experiment_user (
    popup_id         BIGINT UNSIGNED NOT NULL,
    salt             VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'the phase''s assignment salt',
    uid              VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    arm              VARCHAR(16) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'variant key or control, of the first exposure',
    first_exposed_at DATETIME(3)     NOT NULL,
    exposures        BIGINT UNSIGNED NOT NULL DEFAULT 0,
    clicks           BIGINT UNSIGNED NOT NULL DEFAULT 0,
    closes           BIGINT UNSIGNED NOT NULL DEFAULT 0,
    first_click_at   DATETIME(3)     NULL DEFAULT NULL,
    batch_id         BIGINT UNSIGNED NOT NULL DEFAULT 0 COMMENT 'worker batch that inserted the row',
    click_batch_id   BIGINT UNSIGNED NOT NULL DEFAULT 0 COMMENT 'worker batch that set first_click_at',
    PRIMARY KEY (popup_id, salt, uid)
) ENGINE = InnoDB;

CREATE TABLE popup_experiment_daily (
    popup_id      BIGINT UNSIGNED NOT NULL,
    salt          VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    arm           VARCHAR(16) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    day           DATE            NOT NULL COMMENT 'UTC day',
    exposed_users BIGINT UNSIGNED NOT NULL DEFAULT 0,
    exposures     BIGINT UNSIGNED NOT NULL DEFAULT 0,
    clicked_users BIGINT UNSIGNED NOT NULL DEFAULT 0,
    clicks        BIGINT UNSIGNED NOT NULL DEFAULT 0,
    closes        BIGINT UNSIGNED NOT NULL DEFAULT 0,
    updated_at    DATETIME(3)     NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    PRIMARY KEY (popup_id, salt, arm, day)
) ENGINE = InnoDB;

-- +goose Down
DROP TABLE popup_experiment_daily;

DROP TABLE popup_experiment_user;
