// Package chaos holds the fault scenarios of `make chaos` (docs/RELIABILITY.md): the real
// popup-api and popup-worker binaries against a MariaDB and redis-server that the scenarios start,
// stop, slow down and kill themselves. The tests build only with `-tags chaos`; scripts/chaos.sh
// runs them (POPUP_CHAOS=full for the durations, fast otherwise, as `make test` does).
package chaos
