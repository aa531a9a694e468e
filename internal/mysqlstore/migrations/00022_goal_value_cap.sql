-- A goal's value cap (docs/CONTRACT.md §14): for a sum goal, the most one user's value counts in
-- the results' capped sums (each user's value is winsorised at it when the results are read, from
-- the per-user rows); NULL for no cap. The stored counts are unchanged: the raw sums stay.

-- +goose Up
ALTER TABLE popup_goal ADD COLUMN value_cap DOUBLE NULL AFTER value_kind;

-- +goose Down
ALTER TABLE popup_goal DROP COLUMN value_cap;
