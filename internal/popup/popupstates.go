package popup

import (
	"cmp"
	"slices"
)

// PopupEntry is one popup's state in a PopupStates.
type PopupEntry struct {
	ID int64
	PopupState
}

// PopupStates is one user's state of each popup, kept sorted by popup id with at most one entry
// per id. A user has few entries (a handful at most), so a slice searched in place costs less
// than a map to build, copy and walk: decoding a stored state makes one allocation, not a map's
// buckets. The zero value (nil) holds nothing.
//
// Like a map, a copy shares its entries with the original: Clone one before changing it when
// the original must stay as it was. Range over it for the entries in id order.
type PopupStates []PopupEntry

// StatesOf returns the states of m, sorted by popup id (a convenience for tests and literals).
func StatesOf(m map[int64]PopupState) PopupStates {
	if len(m) == 0 {
		return nil
	}
	out := make(PopupStates, 0, len(m))
	for id, ps := range m {
		out = append(out, PopupEntry{ID: id, PopupState: ps})
	}
	slices.SortFunc(out, func(a, b PopupEntry) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// Len returns the number of popups with a state.
func (p PopupStates) Len() int { return len(p) }

// index returns where id's entry is, or would be inserted, and whether it is there.
func (p PopupStates) index(id int64) (int, bool) {
	lo, hi := 0, len(p)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if p[m].ID < id {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo, lo < len(p) && p[lo].ID == id
}

// Get returns the state of popup id, the zero state (never shown) when it has none.
func (p PopupStates) Get(id int64) PopupState {
	if i, ok := p.index(id); ok {
		return p[i].PopupState
	}
	return PopupState{}
}

// Lookup returns the state of popup id and whether it has one.
func (p PopupStates) Lookup(id int64) (PopupState, bool) {
	if i, ok := p.index(id); ok {
		return p[i].PopupState, true
	}
	return PopupState{}, false
}

// Set makes ps the state of popup id, replacing the one it had or inserting it in id order.
func (p *PopupStates) Set(id int64, ps PopupState) {
	i, ok := p.index(id)
	if ok {
		(*p)[i].PopupState = ps
		return
	}
	*p = slices.Insert(*p, i, PopupEntry{ID: id, PopupState: ps})
}

// Clone returns a copy that shares nothing with p (nil for an empty p).
func (p PopupStates) Clone() PopupStates {
	if len(p) == 0 {
		return nil
	}
	return slices.Clone(p)
}
