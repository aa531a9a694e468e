package mysqlstore

import (
	"context"
	"database/sql"
	"errors"
)

// MigrateTo applies the migrations up to version only, so a test can build a database as an
// older release left it and then migrate it up.
func MigrateTo(ctx context.Context, db *sql.DB, version int64) error {
	p, err := provider(db)
	if err != nil {
		return err
	}
	_, err = p.UpTo(ctx, version)
	return err
}

// Version returns the current config version: the tests' check that a write bumped it (or did
// not). Production reads it with the popups, in Snapshot.
func (r *PopupRepo) Version(ctx context.Context) (int64, error) {
	var v int64
	err := r.db.QueryRowContext(ctx, `SELECT version FROM popup_config_version WHERE id = 1`).Scan(&v)
	return v, err
}

// MigrateDownTo rolls the schema back to version.
func MigrateDownTo(ctx context.Context, db *sql.DB, version int64) error {
	p, err := provider(db)
	if err != nil {
		return err
	}
	_, err = p.DownTo(ctx, version)
	return err
}

// StopAfter makes p's Maintain runs stop after the detachment step named (StepConverted, or with
// ExchangeOnly StepTwinMade, StepExchanged or StepDropped), the n-th time it ends, with
// ErrStopped: a worker killed there.
func (p *LogPartitions) StopAfter(step string, n int) {
	p.afterStep = func(s string) error {
		if s != step {
			return nil
		}
		if n--; n > 0 {
			return nil
		}
		p.afterStep = nil
		return ErrStopped
	}
}

// ErrStopped is the error of a Maintain run that StopAfter stopped.
var ErrStopped = errors.New("stopped between the steps")

// ExchangeOnly makes p take days out of the log as it does on MySQL 8.0, by EXCHANGE PARTITION.
func (p *LogPartitions) ExchangeOnly() { p.exchangeOnly = true }

// ConvertsPartitions is convertsPartitions, for its table test.
var ConvertsPartitions = convertsPartitions

// The steps of a day's detachment, for StopAfter.
const (
	StepConverted = stepConverted
	StepTwinMade  = stepTwinMade
	StepExchanged = stepExchanged
	StepDropped   = stepDropped
)
