-- Results per locale (docs/CONTRACT.md §8 "Results per locale"): the language each impression
-- showed, and each click attributed to the language of the impression it answers.
--
-- * popup_action_log.locale: for an impression, the locale the answer named (a translation's tag
--   or `default`); for a click, the locale of its impression, found by the click's decision_id
--   (the impression's event_id) when the worker writes it; '' where none is known (closes,
--   exposures, every row before this migration, a click whose impression the log does not hold).
--   Added at the end with a default: no copy of the log on either server.
-- * The (popup_id, action, event_at, uid) index gains locale at its end, so that the unique users
--   per locale of a range are read from the index alone, like the unique users (migration 00008).
--   Rebuilt in place without locking writes; same name, same prefix, so every plan that used it
--   still does.
-- * popup_locale_slot_stats: per popup, UTC quarter hour and locale, the impressions and clicks
--   the action log newly accepted, kept by the worker in the transaction that writes the log with
--   popup_slot_stats' rule (migration 00008), so that a zone's days are sums of its quarter hours.
--   Kept forever. Rows only for events with a locale: what the results show as "no locale known"
--   is the popup's totals less these rows' sums.
--
-- Nothing is filled from the existing log: it holds no locale.

-- +goose Up
ALTER TABLE popup_action_log
    ADD COLUMN locale VARCHAR(16) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '' COMMENT 'impression: the locale shown; click: its impression''s; '''' = not known';

ALTER TABLE popup_action_log
    DROP KEY idx_popup_action_log_popup_action_time_uid,
    ADD KEY idx_popup_action_log_popup_action_time_uid (popup_id, action, event_at, uid, locale),
    ALGORITHM = INPLACE, LOCK = NONE;

CREATE TABLE popup_locale_slot_stats (
    popup_id    BIGINT UNSIGNED NOT NULL,
    slot_start  DATETIME        NOT NULL COMMENT 'UTC start of the quarter hour of the event time',
    locale      VARCHAR(16)     CHARACTER SET ascii COLLATE ascii_bin NOT NULL COMMENT 'a translation''s tag or default',
    impressions BIGINT UNSIGNED NOT NULL DEFAULT 0,
    clicks      BIGINT UNSIGNED NOT NULL DEFAULT 0,
    updated_at  DATETIME(3)     NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    PRIMARY KEY (popup_id, slot_start, locale)
) ENGINE = InnoDB;

-- +goose Down
DROP TABLE popup_locale_slot_stats;

ALTER TABLE popup_action_log
    DROP KEY idx_popup_action_log_popup_action_time_uid,
    ADD KEY idx_popup_action_log_popup_action_time_uid (popup_id, action, event_at, uid),
    ALGORITHM = INPLACE, LOCK = NONE;

ALTER TABLE popup_action_log
    DROP COLUMN locale;
