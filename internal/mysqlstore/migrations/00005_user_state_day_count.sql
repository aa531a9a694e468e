-- The daily cap's count in the state rows: a user's state comes back from MySQL (after Redis lost
-- it) in one statement on popup_user_state's primary key, instead of that plus a count of today's
-- impressions in popup_action_log.
--
-- * impression_day: the UTC day number (unix seconds / 86400) of the latest impression of this
--   popup for this user;
-- * day_impressions: the user's impressions of every popup on that day, as of that impression
--   (each impression event carries it). The user's count today is the largest day_impressions of
--   their rows whose impression_day is today. Both only move forward (a later day, or the same day
--   with a larger count), so replays and reordering are harmless, like every other column.
--
-- Rows written before this migration have neither (0): for a user whose Redis state is lost on the
-- day of the upgrade, impressions shown earlier that day do not count toward the daily cap again.

-- +goose Up
ALTER TABLE popup_user_state
    ADD COLUMN impression_day  INT          NOT NULL DEFAULT 0 AFTER last_close_at,
    ADD COLUMN day_impressions INT UNSIGNED NOT NULL DEFAULT 0 AFTER impression_day;

-- +goose Down
ALTER TABLE popup_user_state
    DROP COLUMN day_impressions,
    DROP COLUMN impression_day;
