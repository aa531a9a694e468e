-- Schema of docs/CONTRACT.md §5. Runs on MariaDB 10.11 and MySQL 8.0: no CHECK-constraint tricks, no
-- engine-specific JSON functions, DATETIME(3) in UTC (the service sets time_zone='+00:00').
-- "Never" times are 1970-01-01 00:00:00 rather than NULL so that the worker's GREATEST()
-- merges never see a NULL.

-- +goose Up
CREATE TABLE popup_config (
    id                     BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
    name                   VARCHAR(200)    NOT NULL,
    status                 VARCHAR(16)     NOT NULL DEFAULT 'active',
    priority               INT             NOT NULL DEFAULT 0,
    start_at               DATETIME(3)     NULL,
    end_at                 DATETIME(3)     NULL,
    reshow_after_seconds   BIGINT          NOT NULL DEFAULT 86400,
    click_cooldown_seconds BIGINT          NOT NULL DEFAULT 0,
    close_cooldown_seconds BIGINT          NOT NULL DEFAULT 86400,
    max_impressions        INT             NOT NULL DEFAULT 0,
    targeting              TEXT            NOT NULL COMMENT 'JSON: platforms, versions, regions, langs, rollout, uids',
    content                MEDIUMTEXT      NOT NULL COMMENT 'JSON: title, content, image_url, link_url, buttons, ext',
    created_at             DATETIME(3)     NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    updated_at             DATETIME(3)     NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    PRIMARY KEY (id),
    -- cache warm-up reads every non-archived popup
    KEY idx_popup_config_status (status, priority)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci;

-- One row: the config version every API instance compares against its snapshot.
CREATE TABLE popup_config_version (
    id         TINYINT UNSIGNED NOT NULL,
    version    BIGINT UNSIGNED  NOT NULL,
    updated_at DATETIME(3)      NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    PRIMARY KEY (id)
) ENGINE = InnoDB;
INSERT INTO popup_config_version (id, version) VALUES (1, 1);

CREATE TABLE popup_user_state (
    uid                VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    popup_id           BIGINT UNSIGNED NOT NULL,
    next_show_at       DATETIME(3)     NOT NULL DEFAULT '1970-01-01 00:00:00',
    impressions        INT UNSIGNED    NOT NULL DEFAULT 0,
    last_impression_at DATETIME(3)     NOT NULL DEFAULT '1970-01-01 00:00:00',
    last_click_at      DATETIME(3)     NOT NULL DEFAULT '1970-01-01 00:00:00',
    last_close_at      DATETIME(3)     NOT NULL DEFAULT '1970-01-01 00:00:00',
    updated_at         DATETIME(3)     NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    -- the state reload after a Redis miss reads one uid's rows; the worker upserts by this key
    PRIMARY KEY (uid, popup_id)
) ENGINE = InnoDB;

CREATE TABLE popup_action_log (
    id          BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
    event_id    VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    uid         VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    popup_id    BIGINT UNSIGNED NOT NULL,
    action      VARCHAR(16)     NOT NULL COMMENT 'impression, click or close',
    event_at    DATETIME(3)     NOT NULL,
    decision_id VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '',
    created_at  DATETIME(3)     NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    PRIMARY KEY (id),
    -- replays are de-duplicated here (INSERT IGNORE)
    UNIQUE KEY uk_popup_action_log_event (event_id),
    -- the daily-cap reload counts one uid's impressions of today
    KEY idx_popup_action_log_uid_time (uid, event_at),
    -- analysts: a popup's actions over time
    KEY idx_popup_action_log_popup_time (popup_id, event_at)
) ENGINE = InnoDB;

-- +goose Down
DROP TABLE popup_action_log;
DROP TABLE popup_user_state;
DROP TABLE popup_config_version;
DROP TABLE popup_config;
