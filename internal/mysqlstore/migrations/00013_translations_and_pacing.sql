-- Translations and pacing across campaigns (docs/CONTRACT.md §12).
--
-- * popup_config.exempt_from_caps: the popup passes the team's pacing (min_gap_seconds and
--   daily_cap) — service notices, outage messages. Every popup that exists now paces like the
--   others (0), so nothing is served differently. The revision and audit documents carry it under
--   "exempt_from_caps", absent when false.
-- * Translations need no column: they are part of the content JSON (key "translations", absent
--   when there are none, so existing rows keep their bytes).

-- +goose Up
ALTER TABLE popup_config
    ADD COLUMN exempt_from_caps TINYINT(1) NOT NULL DEFAULT 0
        COMMENT '1: the popup passes min_gap_seconds and daily_cap'
        AFTER max_impressions;

-- +goose Down
ALTER TABLE popup_config DROP COLUMN exempt_from_caps;
