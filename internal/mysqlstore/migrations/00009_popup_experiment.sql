-- A popup may carry one experiment: content variants and an optional control arm, with the phase
-- and salt that key its assignment (docs/CONTRACT.md §10).
--
-- * popup_config.experiment: the experiment as JSON text (status, coverage_percent, variants,
--   control, planned_end_at, phase, salt, phase_started_at, concluded_variant), NULL for none.
--   Every popup that exists now has none, so no row changes and nothing is served differently.
--   The revision and audit documents copy it under the key "experiment" (absent: none).

-- +goose Up
ALTER TABLE popup_config
    ADD COLUMN experiment MEDIUMTEXT NULL DEFAULT NULL
        COMMENT 'JSON: status, coverage_percent, variants, control, planned_end_at, phase, salt, phase_started_at, concluded_variant; NULL = none'
        AFTER content;

-- +goose Down
ALTER TABLE popup_config DROP COLUMN experiment;
