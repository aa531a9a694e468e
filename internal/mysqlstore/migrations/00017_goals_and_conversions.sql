-- Goals and conversions (docs/CONTRACT.md §14): the outcomes experiments measure besides clicks.
--
-- * popup_goal: one row per goal, by its key (what a conversion names). `version` increases
--   with every write (the ETag).
-- * popup_goal_change: one row per goal write (the audit of goals): who, when, and the goal
--   before and after as JSON (NULL for none). Kept after the goal is deleted; by id, since a key
--   may be deleted and created again.
-- * popup_conversion_log: one row per accepted conversion, de-duplicated by (uid, event_id) like
--   the action log; `batch_id` is the random id of the worker batch that inserted the row, so that
--   inside its transaction the rows carrying it are the conversions it newly accepted (the action
--   log's batch_id rule of migration 00003): only those are attributed, so a batch written twice
--   counts once.
-- * popup_experiment_goal_user: per experiment phase (popup, salt), user and goal, the user's
--   attributed conversions and the sum of their values; made by the user's first attributed
--   conversion, which counts the user as converted.
-- * popup_experiment_goal: per phase, arm and goal, the sums the results read: converted users,
--   conversions, the sum of the users' values and of their squares (the variance of the value
--   per user).

-- +goose Up
CREATE TABLE popup_goal (
    goal_key     VARCHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    name         VARCHAR(400)    NOT NULL,
    window_hours INT UNSIGNED    NOT NULL,
    value_kind   VARCHAR(8) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'none or sum',
    version      BIGINT UNSIGNED NOT NULL,
    created_at   DATETIME(3)     NOT NULL,
    updated_at   DATETIME(3)     NOT NULL,
    PRIMARY KEY (goal_key)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci;

CREATE TABLE popup_goal_change (
    id           BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
    goal_key     VARCHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    version      BIGINT UNSIGNED NOT NULL,
    at           DATETIME(3)     NOT NULL,
    actor        VARCHAR(64)     NOT NULL,
    actor_role   VARCHAR(16)     NULL,
    action       VARCHAR(16)     NOT NULL COMMENT 'create, update or delete',
    before_state TEXT            NULL,
    after_state  TEXT            NULL,
    PRIMARY KEY (id),
    KEY idx_popup_goal_change_key (goal_key, id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci;

CREATE TABLE popup_conversion_log (
    uid         VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    event_id    VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    goal_key    VARCHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    value       DOUBLE          NOT NULL DEFAULT 0,
    event_at    DATETIME(3)     NOT NULL,
    received_at DATETIME(3)     NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    batch_id    BIGINT UNSIGNED NOT NULL DEFAULT 0,
    PRIMARY KEY (uid, event_id),
    KEY idx_popup_conversion_log_goal (goal_key, event_at)
) ENGINE = InnoDB;

CREATE TABLE popup_experiment_goal_user (
    popup_id    BIGINT UNSIGNED NOT NULL,
    salt        VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    uid         VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    goal_key    VARCHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    arm         VARCHAR(16) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    conversions BIGINT UNSIGNED NOT NULL DEFAULT 0,
    value_sum   DOUBLE          NOT NULL DEFAULT 0,
    first_at    DATETIME(3)     NOT NULL,
    PRIMARY KEY (popup_id, salt, uid, goal_key),
    KEY idx_popup_experiment_goal_user_uid (uid)
) ENGINE = InnoDB;

CREATE TABLE popup_experiment_goal (
    popup_id        BIGINT UNSIGNED NOT NULL,
    salt            VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    arm             VARCHAR(16) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    goal_key        VARCHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    converted_users BIGINT UNSIGNED NOT NULL DEFAULT 0,
    conversions     BIGINT UNSIGNED NOT NULL DEFAULT 0,
    value_sum       DOUBLE          NOT NULL DEFAULT 0,
    value_sq_sum    DOUBLE          NOT NULL DEFAULT 0 COMMENT 'sum over users of the square of their value_sum',
    PRIMARY KEY (popup_id, salt, arm, goal_key)
) ENGINE = InnoDB;

-- +goose Down
DROP TABLE popup_experiment_goal;
DROP TABLE popup_experiment_goal_user;
DROP TABLE popup_conversion_log;
DROP TABLE popup_goal_change;
DROP TABLE popup_goal;
