-- Operator roles (viewer, editor, publisher, admin): every revision and audit entry records the
-- role its actor had when it wrote, beside the actor's name.
--
-- * popup_revision.actor_role, popup_audit.actor_role: the role's name. NULL for the rows written
--   before this migration (their actor's role was not recorded; every operator then had full
--   rights) and for the "(migration)" revisions of migration 00004. Existing rows are kept as
--   they are; adding a nullable column rewrites nothing.

-- +goose Up
ALTER TABLE popup_revision ADD COLUMN actor_role VARCHAR(16) NULL AFTER actor;
ALTER TABLE popup_audit ADD COLUMN actor_role VARCHAR(16) NULL AFTER actor;

-- +goose Down
ALTER TABLE popup_audit DROP COLUMN actor_role;
ALTER TABLE popup_revision DROP COLUMN actor_role;
