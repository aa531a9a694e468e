-- The audit log's operators and privacy requests (GET /admin/v1/audit/changes?resource=):
-- * popup_operator: the operators popup-api last started with (POPUP_ADMIN_TOKENS…): name, role
--   and a salted SHA-256 of the token (never the token), so that the next start can tell which
--   operators were added, removed, given another role or another token.
-- * popup_operator_change: each such difference, recorded in the transaction that updates
--   popup_operator.
-- * privacy_request_change: each erasure asked (by whom), each erasure done (with how many rows
--   and keys it removed) and each export made; never the uid. The erasures asked and done
--   before this migration are copied from privacy_erasure, oldest first.
-- * an index (at, id) on each table of the audit log's changes: the log of every resource merges
--   them by time, newest first (built in place, without a lock on writes).

-- +goose Up
CREATE TABLE popup_operator (
    name       VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    role       VARCHAR(16) NOT NULL,
    token_salt BINARY(16)  NOT NULL,
    token_hash BINARY(32)  NOT NULL COMMENT 'SHA-256 of token_salt and the token',
    PRIMARY KEY (name)
) ENGINE = InnoDB;

CREATE TABLE popup_operator_change (
    id       BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
    at       DATETIME(3)     NOT NULL,
    actor    VARCHAR(64)     NOT NULL COMMENT '(configuration): popup-api read it at start',
    name     VARCHAR(64)     CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    action   VARCHAR(16)     NOT NULL COMMENT 'add, remove, role or token',
    old_role VARCHAR(16)     NULL,
    new_role VARCHAR(16)     NULL,
    PRIMARY KEY (id),
    KEY idx_popup_operator_change_at (at, id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci;

CREATE TABLE privacy_request_change (
    id         BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
    at         DATETIME(3)     NOT NULL,
    actor      VARCHAR(64)     NOT NULL,
    actor_role VARCHAR(16)     NULL,
    action     VARCHAR(16)     NOT NULL COMMENT 'erasure (asked), erased (done) or export',
    erasure_id CHAR(32)        CHARACTER SET ascii COLLATE ascii_bin NULL,
    removed    BIGINT          NULL COMMENT 'an erasure done: the rows and keys it removed',
    PRIMARY KEY (id),
    KEY idx_privacy_request_change_at (at, id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci;

ALTER TABLE popup_audit ADD KEY idx_popup_audit_at (at, id), ALGORITHM = INPLACE, LOCK = NONE;
ALTER TABLE audience_changes ADD KEY idx_audience_changes_at (at, id), ALGORITHM = INPLACE, LOCK = NONE;
ALTER TABLE popup_goal_change ADD KEY idx_popup_goal_change_at (at, id), ALGORITHM = INPLACE, LOCK = NONE;
ALTER TABLE popup_setting_change ADD KEY idx_popup_setting_change_at (at, id), ALGORITHM = INPLACE, LOCK = NONE;

INSERT INTO privacy_request_change (at, actor, actor_role, action, erasure_id, removed)
SELECT at, actor, actor_role, action, erasure_id, NULL FROM (
    SELECT requested_at AS at, requested_by AS actor, requested_role AS actor_role, 'erasure' AS action, id AS erasure_id
    FROM privacy_erasure
    UNION ALL
    SELECT done_at, '(erasure)', 'admin', 'erased', id FROM privacy_erasure WHERE done_at IS NOT NULL
) x ORDER BY at, action DESC;

-- +goose Down
ALTER TABLE popup_setting_change DROP KEY idx_popup_setting_change_at;
ALTER TABLE popup_goal_change DROP KEY idx_popup_goal_change_at;
ALTER TABLE audience_changes DROP KEY idx_audience_changes_at;
ALTER TABLE popup_audit DROP KEY idx_popup_audit_at;
DROP TABLE privacy_request_change;
DROP TABLE popup_operator_change;
DROP TABLE popup_operator;
