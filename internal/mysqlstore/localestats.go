package mysqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"

	"popupsvc/internal/event"
	"popupsvc/internal/popup"
	"popupsvc/internal/report"
)

// Results per locale (docs/CONTRACT.md §8 "Results per locale", migration 00018). An impression
// carries the locale its answer showed; a click carries none from the client, so the worker
// attributes it to the locale of the impression it answers: the impression whose event_id is the
// click's decision_id, of the same user and popup, found in the batch itself or in the action log.
// A click without a decision_id, or whose impression the log does not hold (purged, never
// recorded, or written later by another worker), gets no locale. The locale goes into the action
// log's row (unique users per locale read it from the log's index) and, for the events the log
// newly accepted, into popup_locale_slot_stats by UTC quarter hour, with popup_slot_stats' rule:
// a batch written twice counts once.

// eventLocales returns the locale each event of the batch is counted under, by index: an
// impression's own, a click's impression's, "" for the rest. One read of the action log, by its
// (uid, event_id) key, for the clicks whose impression is not in the batch; none without such
// clicks.
func eventLocales(ctx context.Context, tx *sql.Tx, events []event.Event) ([]string, error) {
	type impKey struct {
		uid, id string
		popupID int64
	}
	var locales []string
	var inBatch map[impKey]string
	var missing []int
	for i := range events {
		e := &events[i]
		switch {
		case e.Action == event.Impression && e.Locale != "":
			if locales == nil {
				locales = make([]string, len(events))
			}
			locales[i] = e.Locale
			if inBatch == nil {
				inBatch = make(map[impKey]string)
			}
			inBatch[impKey{e.UID, e.ID, e.PopupID}] = e.Locale
		case e.Action == event.Click && e.DecisionID != "":
			missing = append(missing, i)
		}
	}
	if locales == nil {
		locales = make([]string, len(events))
	}
	wanted := missing[:0]
	for _, i := range missing {
		e := &events[i]
		if l, ok := inBatch[impKey{e.UID, e.DecisionID, e.PopupID}]; ok {
			locales[i] = l
			continue
		}
		wanted = append(wanted, i)
	}
	if len(wanted) == 0 {
		return locales, nil
	}
	var q strings.Builder
	q.Grow(128 + len(wanted)*6)
	q.WriteString(`SELECT uid, event_id, popup_id, locale FROM popup_action_log WHERE action = 'impression' AND locale <> '' AND (uid, event_id) IN (`)
	args := appendLogKeys(&q, make([]any, 0, 2*len(wanted)), events, wanted, func(e *event.Event) string { return e.DecisionID })
	rows, err := tx.QueryContext(ctx, q.String(), args...)
	if err != nil {
		return nil, err
	}
	found := make(map[impKey]string, len(wanted))
	err = scanRows(rows, func(rows *sql.Rows) error {
		var k impKey
		var l string
		if err := rows.Scan(&k.uid, &k.id, &k.popupID, &l); err != nil {
			return err
		}
		found[k] = l
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, i := range wanted {
		e := &events[i]
		locales[i] = found[impKey{e.UID, e.DecisionID, e.PopupID}]
	}
	return locales, nil
}

// localeCount is one popup_locale_slot_stats increment.
type localeCount struct {
	popupID     int64
	slot        time.Time // UTC start of the quarter hour
	locale      string
	imp, clicks int64
}

// countLocales counts the newly accepted impressions and clicks that have a locale per popup,
// UTC quarter hour and locale, in primary-key order.
func countLocales(events []event.Event, locales []string, news []newRow) []localeCount {
	type key struct {
		popupID int64
		slot    int64
		locale  string
	}
	var idx map[key]int
	var out []localeCount
	slotSec := int64(SlotLength / time.Second)
	for _, r := range news {
		e := &events[r.i]
		l := locales[r.i]
		if l == "" || (e.Action != event.Impression && e.Action != event.Click) {
			continue
		}
		if idx == nil {
			idx = make(map[key]int, 8)
		}
		k := key{e.PopupID, floorDiv(r.at.Unix(), slotSec), l}
		j, ok := idx[k]
		if !ok {
			j = len(out)
			idx[k] = j
			out = append(out, localeCount{popupID: e.PopupID, slot: time.Unix(k.slot*slotSec, 0).UTC(), locale: l})
		}
		if e.Action == event.Impression {
			out[j].imp++
		} else {
			out[j].clicks++
		}
	}
	slices.SortFunc(out, func(a, b localeCount) int {
		return cmp.Or(cmp.Compare(a.popupID, b.popupID), a.slot.Compare(b.slot), strings.Compare(a.locale, b.locale))
	})
	return out
}

// addLocaleStats adds counts to popup_locale_slot_stats.
func addLocaleStats(ctx context.Context, tx *sql.Tx, counts []localeCount) error {
	args := make([]any, 0, len(counts)*5)
	for _, c := range counts {
		args = append(args, c.popupID, c.slot, c.locale, c.imp, c.clicks)
	}
	return addCounts(ctx, tx, "popup_locale_slot_stats", []string{"popup_id", "slot_start", "locale"}, []string{"impressions", "clicks"}, args)
}

// localeStats reads one popup's impressions and clicks per locale over q's days (a primary-key
// range of popup_locale_slot_stats) and, when users is true, the distinct users shown it in each
// locale over the range (the action log's (popup_id, action, event_at, uid, locale) index alone),
// sorted by locale with popup.DefaultLocale first.
func (r *StatsRepo) localeStats(ctx context.Context, id int64, q report.StatsQuery, users bool) ([]report.LocaleCount, error) {
	from, to := q.Bounds[0].UTC(), q.Bounds[q.Days()].UTC()
	byLocale := map[string]*report.LocaleCount{}
	at := func(l string) *report.LocaleCount {
		c, ok := byLocale[l]
		if !ok {
			c = &report.LocaleCount{Locale: l}
			byLocale[l] = c
		}
		return c
	}
	rows, err := r.db.QueryContext(ctx, `SELECT locale, SUM(impressions), SUM(clicks) FROM popup_locale_slot_stats
		WHERE popup_id = ? AND slot_start >= ? AND slot_start < ? GROUP BY locale`, id, from, to)
	if err != nil {
		return nil, fmt.Errorf("read locale stats: %w", err)
	}
	err = scanRows(rows, func(rows *sql.Rows) error {
		var l string
		var imp, clk int64
		if err := rows.Scan(&l, &imp, &clk); err != nil {
			return err
		}
		c := at(l)
		c.Impressions, c.Clicks = imp, clk
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read locale stats: %w", err)
	}
	if users {
		rows, err := r.db.QueryContext(ctx, `SELECT locale, COUNT(DISTINCT uid) FROM popup_action_log
			WHERE popup_id = ? AND action = 'impression' AND event_at >= ? AND event_at < ? AND locale <> '' GROUP BY locale`,
			id, toDB(from), toDB(to))
		if err != nil {
			return nil, fmt.Errorf("count unique users per locale: %w", err)
		}
		err = scanRows(rows, func(rows *sql.Rows) error {
			var l string
			var n int64
			if err := rows.Scan(&l, &n); err != nil {
				return err
			}
			at(l).Users = &n
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("count unique users per locale: %w", err)
		}
	}
	out := make([]report.LocaleCount, 0, len(byLocale))
	for _, c := range byLocale {
		if users && c.Users == nil {
			zero := int64(0) // counts without a user the log keeps: clicks on impressions before the range
			c.Users = &zero
		}
		out = append(out, *c)
	}
	slices.SortFunc(out, func(a, b report.LocaleCount) int {
		return cmp.Or(-cmp.Compare(boolInt(a.Locale == popup.DefaultLocale), boolInt(b.Locale == popup.DefaultLocale)),
			strings.Compare(a.Locale, b.Locale))
	})
	return out, nil
}
