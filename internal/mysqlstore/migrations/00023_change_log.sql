-- The audit log's changes besides popups (GET /admin/v1/audit?resource=): setting changes get a
-- table of their own (popup_setting keeps only the current value), and audience changes an id
-- that orders them across audiences, as popup_goal_change's does for goals.

-- +goose Up
CREATE TABLE popup_setting_change (
    id        BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
    at        DATETIME(3)     NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    actor     VARCHAR(64)     NOT NULL,
    name      VARCHAR(64)     CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    old_value VARCHAR(255)    NULL COMMENT 'NULL: never set before',
    new_value VARCHAR(255)    NOT NULL,
    PRIMARY KEY (id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci;

ALTER TABLE audience_changes
    ADD COLUMN id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT FIRST,
    ADD UNIQUE KEY uq_audience_changes_id (id);

-- +goose Down
ALTER TABLE audience_changes DROP COLUMN id;
DROP TABLE popup_setting_change;
