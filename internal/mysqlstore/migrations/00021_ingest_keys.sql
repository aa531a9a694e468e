-- Ingest keys (docs/CONTRACT.md §14, "Ingest"): the credentials a backend sends as a bearer token
-- with conversions that carry a value. One row per key, kept after its revocation as its audit
-- record: who created it and when, who revoked it and when. Only the SHA-256 of the secret is
-- stored (`key_hash`); `key_prefix` is its first characters, to tell keys apart in a list.

-- +goose Up
CREATE TABLE popup_ingest_key (
    id           BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
    name         VARCHAR(400)    NOT NULL,
    key_hash     BINARY(32)      NOT NULL,
    key_prefix   VARCHAR(16) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    created_at   DATETIME(3)     NOT NULL,
    created_by   VARCHAR(64)     NOT NULL,
    created_role VARCHAR(16) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    revoked_at   DATETIME(3)     NULL,
    revoked_by   VARCHAR(64)     NULL,
    revoked_role VARCHAR(16) CHARACTER SET ascii COLLATE ascii_bin NULL,
    PRIMARY KEY (id),
    UNIQUE KEY uk_popup_ingest_key_hash (key_hash)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci;

-- +goose Down
DROP TABLE popup_ingest_key;
