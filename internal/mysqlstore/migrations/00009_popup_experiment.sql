-- A popup may carry one experiment: content variants and an optional control arm, with the phase
-- and salt that key its assignment (docs/CONTRACT.md §10).
--
-- * popup_config.experiment: the experiment as JSON text (status, coverage_percent, variants,
--   control, planned_end_at, phase, salt, phase_started_at, concluded_variant), NULL for none.
--   Every popup that exists now has none, so no row changes and nothing is served differently.
--   The revision and audit documents copy it under the key "experiment" (absent: none).
-- * popup_audit.action widens to 32 characters for the experiment's actions (reassign,
--   experiment_start, experiment_stop, experiment_conclude); existing entries keep theirs.

-- +goose Up
ALTER TABLE popup_config
    ADD COLUMN experiment MEDIUMTEXT NULL DEFAULT NULL
        COMMENT 'JSON: status, coverage_percent, variants, control, planned_end_at, phase, salt, phase_started_at, concluded_variant; NULL = none'
        AFTER content;

ALTER TABLE popup_audit
    MODIFY COLUMN action VARCHAR(32) NOT NULL
        COMMENT 'create, update, archive, rollback, import, reassign, experiment_start, experiment_stop or experiment_conclude';

-- +goose Down
-- popup_audit.action stays VARCHAR(32): the audit rows of experiment actions
-- (experiment_conclude is 19 characters) are kept, and would not fit back in 16.
ALTER TABLE popup_config DROP COLUMN experiment;
