-- Audiences (docs/CONTRACT.md §11): operators' uploaded lists of users that popups target.
--
-- * audiences: one row per audience. `fp_key` keys its members' fingerprints
--   (internal/audience.Key), drawn once at creation and never changed. `version` increases with
--   every write (metadata or members: the ETag); `base_version` is the version of the last full
--   replace (or of the create, whose base is the empty list); `size` the distinct members now.
-- * audience_changes: one row per write: the version history and the audit log (never the uids).
--   `upload_id` is the member upload the write committed (NULL for create, update, delete).
--   Rows outlive their audience: a delete is recorded, and the history stays.
-- * audience_uploads: one row per member upload. `version` is NULL while it is staged (its parts
--   are written as the body streams in) and the version it made once committed. A committed
--   upload older than the audience's base is removed with its parts after the replace that
--   superseded it.
-- * audience_fps: an upload's fingerprints, sorted and distinct (the whole list for a replace,
--   the fingerprints that really change the list for an add or a remove), about 1 MiB (131,072
--   fingerprints, 8 big-endian bytes each) a row, in `seq` order.
-- * audience_uids: the uids an upload sent (a replace's and an add's), newline-joined in upload
--   order, about 1 MiB a row, in `seq` order: what GET .../members streams back.

-- +goose Up
CREATE TABLE audiences (
    id           BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
    name         VARCHAR(100) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    description  VARCHAR(1000) NOT NULL DEFAULT '',
    fp_key       BINARY(16) NOT NULL,
    version      BIGINT NOT NULL,
    base_version BIGINT NOT NULL,
    size         BIGINT NOT NULL DEFAULT 0,
    created_at   DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    updated_at   DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    PRIMARY KEY (id),
    UNIQUE KEY uk_audiences_name (name)
) ENGINE=InnoDB;

CREATE TABLE audience_changes (
    audience_id BIGINT UNSIGNED NOT NULL,
    version     BIGINT NOT NULL,
    at          DATETIME(3) NOT NULL,
    actor       VARCHAR(64) NOT NULL,
    actor_role  VARCHAR(16) NULL,
    action      VARCHAR(16) NOT NULL COMMENT 'create, update, replace, add, remove, delete',
    upload_id   BIGINT UNSIGNED NULL,
    added       BIGINT NOT NULL DEFAULT 0,
    removed     BIGINT NOT NULL DEFAULT 0,
    size        BIGINT NOT NULL DEFAULT 0 COMMENT 'members after the write',
    PRIMARY KEY (audience_id, version)
) ENGINE=InnoDB;

CREATE TABLE audience_uploads (
    id          BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
    audience_id BIGINT UNSIGNED NOT NULL,
    created_at  DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    version     BIGINT NULL COMMENT 'NULL while staged; the version it made once committed',
    PRIMARY KEY (id),
    KEY idx_audience_uploads_audience (audience_id, version)
) ENGINE=InnoDB;

CREATE TABLE audience_fps (
    upload_id BIGINT UNSIGNED NOT NULL,
    seq       INT NOT NULL,
    fps       LONGBLOB NOT NULL,
    PRIMARY KEY (upload_id, seq)
) ENGINE=InnoDB;

CREATE TABLE audience_uids (
    upload_id BIGINT UNSIGNED NOT NULL,
    seq       INT NOT NULL,
    uids      LONGBLOB NOT NULL,
    PRIMARY KEY (upload_id, seq)
) ENGINE=InnoDB;

-- +goose Down
DROP TABLE audience_uids;
DROP TABLE audience_fps;
DROP TABLE audience_uploads;
DROP TABLE audience_changes;
DROP TABLE audiences;
