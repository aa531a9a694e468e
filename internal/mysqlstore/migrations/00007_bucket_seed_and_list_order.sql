-- The rollout bucket of a popup is keyed on its bucket seed (docs/CONTRACT.md §2, targeting), not
-- its id, so that a draft is bucketed before it has an id exactly as it will be once saved.
--
-- * popup_config.bucket_seed: 1-64 characters of [A-Za-z0-9_-], fixed at the popup's first save
--   and never changed. Every popup that exists now gets its decimal id, the key its buckets have
--   always had, so no user moves in or out of a rollout with this migration. The service always
--   writes a seed; the default '' (a row written by hand) reads as the decimal id too.
-- * Indexes for the admin list's sort orders (updated_at, name, priority; each ends in the primary
--   key, so a page continues from (key, id) without sorting the table).

-- +goose Up
ALTER TABLE popup_config
    ADD COLUMN bucket_seed VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '' AFTER name,
    ADD KEY idx_popup_config_updated_at (updated_at),
    ADD KEY idx_popup_config_name (name),
    ADD KEY idx_popup_config_priority (priority);

UPDATE popup_config SET bucket_seed = CAST(id AS CHAR);

-- +goose Down
ALTER TABLE popup_config
    DROP KEY idx_popup_config_priority,
    DROP KEY idx_popup_config_name,
    DROP KEY idx_popup_config_updated_at,
    DROP COLUMN bucket_seed;
