-- Erasure of a user and what keeps an erased user's events out (docs/CONTRACT.md §12). No table
-- here holds a uid in clear: every uid is a keyed hash (HMAC-SHA256 under POPUP_PRIVACY_KEY, 64
-- hex characters), and the uid a pending erasure still has to work on is sealed under a key
-- derived from the same secret.
--
-- * privacy_erasure: one row per erasure request, its status and its audit record: who asked,
--   when, the keyed hash of the uid, when it was done and how many rows or keys each store lost
--   (`removed`, JSON). `sealed_uid` is the uid sealed (AES-GCM) while the erasure is pending, so
--   that any worker can finish it; NULL once it is done. `lease_owner`/`lease_until` name the
--   worker running it; a lease that has run out lets another worker take it over.
-- * privacy_tombstone: one row per erased uid (its keyed hash) for the API's de-duplication
--   window after the erasure. `cutoff` NULL: the erasure is running and the worker drops every
--   event of the uid; then the worker drops the uid's events stamped before `cutoff` (queued
--   before the erasure). Removed once `expires_at` has passed.
-- * privacy_barrier: one row. Every batch the worker writes reads it in share mode before it
--   reads the tombstones; an erasure updates it before it inserts its tombstone. So a batch is
--   either committed before the tombstone exists (and the erasure's deletes, which come after,
--   remove its rows), or it sees the tombstone.
-- * popup_experiment_user gains an index on uid: its key starts with the popup, and an erasure
--   deletes a user's rows of every popup. Built online (in place, no lock on writes).

-- +goose Up
CREATE TABLE privacy_erasure (
    id             CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'random, hex',
    uid_hash       CHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'HMAC-SHA256 of the uid under POPUP_PRIVACY_KEY, hex',
    sealed_uid     VARBINARY(255) NULL COMMENT 'the uid sealed while pending; NULL once done',
    status         VARCHAR(16) NOT NULL COMMENT 'pending or done',
    requested_at   DATETIME(3) NOT NULL,
    requested_by   VARCHAR(64) NOT NULL COMMENT 'the operator',
    requested_role VARCHAR(16) NULL,
    lease_owner    VARCHAR(128) NULL,
    lease_until    DATETIME(3) NULL,
    attempts       INT NOT NULL DEFAULT 0,
    done_at        DATETIME(3) NULL,
    removed        TEXT NULL COMMENT 'JSON: rows or keys removed per store',
    PRIMARY KEY (id),
    KEY idx_privacy_erasure_pending (status, requested_at),
    KEY idx_privacy_erasure_uid (uid_hash)
) ENGINE = InnoDB;

CREATE TABLE privacy_tombstone (
    uid_hash   CHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    cutoff     DATETIME(3) NULL COMMENT 'NULL: erasure running, drop every event; else drop events stamped before it',
    expires_at DATETIME(3) NOT NULL,
    PRIMARY KEY (uid_hash),
    KEY idx_privacy_tombstone_expires (expires_at)
) ENGINE = InnoDB;

CREATE TABLE privacy_barrier (
    id       TINYINT NOT NULL,
    erasures BIGINT UNSIGNED NOT NULL DEFAULT 0,
    PRIMARY KEY (id)
) ENGINE = InnoDB;

INSERT INTO privacy_barrier (id, erasures) VALUES (1, 0);

ALTER TABLE popup_experiment_user
    ADD KEY idx_popup_experiment_user_uid (uid),
    ALGORITHM = INPLACE, LOCK = NONE;

-- +goose Down
ALTER TABLE popup_experiment_user DROP KEY idx_popup_experiment_user_uid;
DROP TABLE privacy_barrier;
DROP TABLE privacy_tombstone;
DROP TABLE privacy_erasure;
