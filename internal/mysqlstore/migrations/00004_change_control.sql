-- Change control: every popup write keeps a revision of the popup and an audit entry, both written
-- in the transaction that changes popup_config; popup names are unique among non-archived
-- popups (an import matches popups by name).
--
-- * popup_config.active_name: the name while the popup is not archived, NULL once it is, under a
--   unique index (NULLs never clash), so two live popups cannot share a name, whatever writes
--   them. It compares names byte for byte (utf8mb4_bin), as the import's matching does. Existing
--   live popups that share a name are renamed first, so this migration never fails on old data:
--   every one but the oldest gets " (#<id>)" appended to its name.
-- * popup_revision: one row per revision of a popup, the popup as that write left it, as JSON
--   ({"id", "name", "status", ..., "targeting": {...}, "content": {...}, "revision",
--   "created_at", "updated_at"}: the columns of popup_config). Existing popups get their
--   current state as a row here, written by actor "(migration)" (a name no operator can have), so
--   their history starts at the revision they were at; the audit log starts empty.
-- * popup_audit: one row per write, newest first by id; filtered by popup or by actor.

-- +goose Up
CREATE TABLE popup_name_dup (id BIGINT UNSIGNED NOT NULL, PRIMARY KEY (id)) ENGINE = InnoDB;

INSERT INTO popup_name_dup (id)
SELECT DISTINCT a.id FROM popup_config a
JOIN popup_config b ON b.name COLLATE utf8mb4_bin = a.name COLLATE utf8mb4_bin AND b.id < a.id AND b.status <> 'archived'
WHERE a.status <> 'archived';

UPDATE popup_config p JOIN popup_name_dup d ON d.id = p.id
SET p.name = CONCAT(LEFT(p.name, 170), ' (#', p.id, ')');

DROP TABLE popup_name_dup;

ALTER TABLE popup_config
    ADD COLUMN active_name VARCHAR(200) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin
        AS (IF(status <> 'archived', name, NULL)) STORED,
    ADD UNIQUE KEY uk_popup_config_active_name (active_name);

CREATE TABLE popup_revision (
    popup_id BIGINT UNSIGNED NOT NULL,
    revision BIGINT UNSIGNED NOT NULL,
    at       DATETIME(3)     NOT NULL,
    actor    VARCHAR(64)     NOT NULL,
    popup    MEDIUMTEXT      NOT NULL COMMENT 'JSON: the popup_config row as this revision left it',
    PRIMARY KEY (popup_id, revision)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci;

INSERT INTO popup_revision (popup_id, revision, at, actor, popup)
SELECT id, revision, updated_at, '(migration)', CONCAT(
    '{"id":', id,
    ',"name":', JSON_QUOTE(name),
    ',"status":', JSON_QUOTE(status),
    ',"priority":', priority,
    ',"start_at":', IFNULL(CONCAT('"', DATE_FORMAT(start_at, '%Y-%m-%dT%H:%i:%s.%fZ'), '"'), 'null'),
    ',"end_at":', IFNULL(CONCAT('"', DATE_FORMAT(end_at, '%Y-%m-%dT%H:%i:%s.%fZ'), '"'), 'null'),
    ',"reshow_after_seconds":', reshow_after_seconds,
    ',"click_cooldown_seconds":', click_cooldown_seconds,
    ',"close_cooldown_seconds":', close_cooldown_seconds,
    ',"max_impressions":', max_impressions,
    ',"targeting":', targeting,
    ',"content":', content,
    ',"revision":', revision,
    ',"created_at":"', DATE_FORMAT(created_at, '%Y-%m-%dT%H:%i:%s.%fZ'), '"',
    ',"updated_at":"', DATE_FORMAT(updated_at, '%Y-%m-%dT%H:%i:%s.%fZ'), '"}')
FROM popup_config;

CREATE TABLE popup_audit (
    id           BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
    at           DATETIME(3)     NOT NULL,
    actor        VARCHAR(64)     NOT NULL,
    action       VARCHAR(16)     NOT NULL COMMENT 'create, update, archive, rollback or import',
    popup_id     BIGINT UNSIGNED NOT NULL,
    revision     BIGINT UNSIGNED NOT NULL,
    before_state MEDIUMTEXT      NULL COMMENT 'JSON as in popup_revision.popup; NULL for a create',
    after_state  MEDIUMTEXT      NULL COMMENT 'JSON as in popup_revision.popup',
    PRIMARY KEY (id),
    -- one popup's entries, newest first
    KEY idx_popup_audit_popup (popup_id, id),
    -- one operator's entries, newest first
    KEY idx_popup_audit_actor (actor, id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci;

-- +goose Down
DROP TABLE popup_audit;
DROP TABLE popup_revision;
ALTER TABLE popup_config
    DROP KEY uk_popup_config_active_name,
    DROP COLUMN active_name;
