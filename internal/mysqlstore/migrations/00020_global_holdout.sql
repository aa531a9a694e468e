-- The global holdout (docs/CONTRACT.md §15): a share of all users is shown no popup but the
-- holdout-exempt ones, and the worker compares them with the others on every goal.
--
-- * popup_config.holdout_exempt: the popup passes the holdout (service notices). Every popup that
--   exists now is held back like the others (0); nothing is served differently until an admin
--   sets holdout_percent. The revision and audit documents carry it under "holdout_exempt",
--   absent when false.
-- * popup_holdout_phase: one row per holdout phase, the setting's history: the percentage, the
--   salt (drawn for the first phase, kept by the later ones), when it started and ended (NULL:
--   running) and who started and ended it. The running phase, if any, is the row without an end;
--   setting holdout_percent to 0 ends it and starts none.
--
-- The holdout is counted in the experiment tables of migrations 00010, 00017 and 00019 as the
-- experiment of popup id 0 (no popup has it), with the phase key "<salt>-p<phase>" for its salt
-- and the groups `holdout` and `others` for its arms: the rollup and the attribution of
-- conversions are the experiments' own, exactly once under the same rules, and an erasure
-- removes a user's rows there as it does an experiment's.

-- +goose Up
ALTER TABLE popup_config
    ADD COLUMN holdout_exempt TINYINT(1) NOT NULL DEFAULT 0
        COMMENT '1: the popup passes the global holdout'
        AFTER exempt_from_caps;

CREATE TABLE popup_holdout_phase (
    phase       INT UNSIGNED    NOT NULL,
    percent     TINYINT UNSIGNED NOT NULL COMMENT '1-20: the share of users held out',
    salt        VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    started_at  DATETIME(3)     NOT NULL,
    started_by  VARCHAR(64)     NOT NULL,
    ended_at    DATETIME(3)     NULL COMMENT 'NULL: running',
    ended_by    VARCHAR(64)     NULL,
    PRIMARY KEY (phase)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci;

-- +goose Down
DROP TABLE popup_holdout_phase;
ALTER TABLE popup_config DROP COLUMN holdout_exempt;
