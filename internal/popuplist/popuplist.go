// Package popuplist holds the admin list of popups as a read model: the query of one page
// (Query: filters, search, Sort, the Position to go on after) and the page it answers (Page).
// mysqlstore answers it; the popups admin slice (internal/admin/popups) reads it from the HTTP
// query and encodes a Position as the page's cursor.
//
// Why a package of its own rather than internal/popup or the slice: paging and sorting a list is
// no rule of publishing or deciding, so the domain does not carry it; and the adapter that answers
// it must not import an HTTP slice. It imports only the domain, for the popups and the statuses
// it filters on.
package popuplist

import (
	"time"

	"popupsvc/internal/popup"
)

// Query selects one page of popups: with one status (when set), in one campaign state at Now
// (when set), archived ones only when Status or State is archived or IncludeArchived; matching
// Search when set; in Sort order, after the popup at After when set; at most Limit.
type Query struct {
	Status          popup.Status
	State           popup.CampaignState
	Now             time.Time // the instant State is judged at
	IncludeArchived bool
	// Search matches a popup whose name, title or content contains it (case-insensitive), or,
	// when it is a decimal number, whose id it is.
	Search string
	// Experiment keeps the popups with an experiment in this status, or with any experiment
	// (ExperimentAny), or without one (ExperimentNone); "" keeps every popup.
	Experiment ExperimentFilter
	Sort       Sort
	After      *Position
	Limit      int
}

// ExperimentFilter is a list's filter on the popups' experiments: a popup.ExperimentStatus, or one of
// these.
type ExperimentFilter string

// The filters of a list on experiments beyond the statuses.
const (
	ExperimentAny  ExperimentFilter = "any"
	ExperimentNone ExperimentFilter = "none"
)

// Valid reports whether f is a filter a list takes ("" is none).
func (f ExperimentFilter) Valid() bool {
	return f == "" || f == ExperimentAny || f == ExperimentNone || popup.ExperimentStatus(f).Valid()
}

// Page is one page of a list and the number of popups matching the query's filters over
// every page.
type Page struct {
	Popups []popup.Popup
	Total  int
}

// SortKey is what a popup list can be ordered by.
type SortKey string

// The sort keys of a popup list.
const (
	SortByID        SortKey = "id"
	SortByUpdatedAt SortKey = "updated_at"
	SortByName      SortKey = "name"
	SortByPriority  SortKey = "priority"
)

// Sort orders a popup list by Key, descending when Desc. Popups with equal keys follow in id
// order of the same direction, so every popup has one place and a page never splits a tie.
type Sort struct {
	Key  SortKey
	Desc bool
}

// ParseSort reads "key" or "-key" (descending); ok is false for anything else. "" is by id.
func ParseSort(s string) (sort Sort, ok bool) {
	if s == "" {
		return Sort{Key: SortByID}, true
	}
	if s[0] == '-' {
		sort.Desc, s = true, s[1:]
	}
	switch k := SortKey(s); k {
	case SortByID, SortByUpdatedAt, SortByName, SortByPriority:
		sort.Key = k
		return sort, true
	}
	return Sort{}, false
}

// String is the sort as ParseSort reads it.
func (s Sort) String() string {
	if s.Desc {
		return "-" + string(s.Key)
	}
	return string(s.Key)
}

// Position is a popup's place in a sorted list: its id and the value of the sort key (only
// the field of the list's key is used).
type Position struct {
	ID        int64
	UpdatedAt time.Time
	Name      string
	Priority  int
}

// PositionOf is p's place in a list sorted by any key.
func PositionOf(p popup.Popup) Position {
	return Position{ID: p.ID, UpdatedAt: p.UpdatedAt, Name: p.Name, Priority: p.Priority}
}
