package snapshot

import (
	"slices"
	"strings"
	"time"

	"popupsvc/internal/popup"
)

// The candidate index narrows selection before any per-popup check: the active popups that can
// match a request's placement, event, platform and region, in selection order. With 10,000
// configs most of them are for another placement, platform or region, and a request should not
// pay for looking at them: a request for one placement never sees another's popups, and one for a
// placement no popup lists finds nothing with one map lookup.

// placeIndex is one placement's candidates: those of plain requests (the popups without a
// trigger) and, by event, those of requests carrying it (the popups whose trigger waits for it).
type placeIndex struct {
	plain  index
	events map[string]*index
	// ruleKeys are the attribute keys the rules of plain's popups read, sorted, each once: a
	// remembered answer for a plain request must be keyed by their values (decide.LocalAnswers).
	ruleKeys []string
}

// whereKey is a placement and an event ("" for plain requests).
type whereKey struct{ placement, event string }

// buildPlaces files every active popup under each placement it lists, then under its trigger's
// event or as a plain request's candidate, each list in selection order (ordered's).
func buildPlaces(ordered []*popup.Compiled, now time.Time) map[string]*placeIndex {
	groups := map[whereKey][]*popup.Compiled{}
	var keys []whereKey // in first-seen order, so the build is deterministic
	for _, c := range ordered {
		if c.Popup.EndAt != nil && !now.Before(*c.Popup.EndAt) {
			continue // ended for good (time only moves forward)
		}
		for _, pl := range c.Popup.Targeting.PlacementsOr() {
			k := whereKey{pl, c.TriggerEvent()}
			if _, ok := groups[k]; !ok {
				keys = append(keys, k)
			}
			groups[k] = append(groups[k], c)
		}
	}
	places := make(map[string]*placeIndex)
	for _, k := range keys {
		x := places[k.placement]
		if x == nil {
			x = &placeIndex{}
			places[k.placement] = x
		}
		idx := buildIndex(groups[k])
		if k.event != "" {
			if x.events == nil {
				x.events = map[string]*index{}
			}
			x.events[k.event] = &idx
			continue
		}
		x.plain = idx
		for _, c := range groups[k] {
			x.ruleKeys = append(x.ruleKeys, c.RuleKeys()...)
		}
		slices.Sort(x.ruleKeys)
		x.ruleKeys = slices.Compact(x.ruleKeys)
	}
	return places
}

var platforms = [...]string{popup.PlatformIOS, popup.PlatformAndroid, popup.PlatformWeb}

// regionKey is a region code as the matcher compares it (popup.CodeKey).
type regionKey = [16]byte

func toRegionKey(s string) (regionKey, bool) { return popup.CodeKey(s) }

// platformIndex holds one platform's candidates.
type platformIndex struct {
	anyRegion []*popup.Compiled               // popups without region targeting
	byRegion  map[regionKey][]*popup.Compiled // anyRegion plus the popups targeting that region, merged in order
}

type index [len(platforms)]platformIndex

// buildIndex files popups (of one placement and event, not ended) under the platforms and
// regions they can match. ordered is in selection order and every list keeps that order.
func buildIndex(ordered []*popup.Compiled) index {
	var idx index
	for pi, pl := range platforms {
		x := platformIndex{byRegion: map[regionKey][]*popup.Compiled{}}
		for _, c := range ordered {
			t := &c.Popup.Targeting
			if len(t.Platforms) > 0 && !containsFold(t.Platforms, pl) {
				continue
			}
			if len(t.Regions) == 0 {
				x.anyRegion = append(x.anyRegion, c)
				// A popup for every region also belongs to every region's list, in order.
				for k, list := range x.byRegion {
					x.byRegion[k] = append(list, c)
				}
				continue
			}
			for _, r := range t.Regions {
				k, ok := toRegionKey(r)
				if !ok {
					continue
				}
				list, seen := x.byRegion[k]
				if !seen {
					// A new region starts with the region-less popups seen so far.
					list = append([]*popup.Compiled(nil), x.anyRegion...)
				}
				if n := len(list); n == 0 || list[n-1] != c {
					list = append(list, c)
				}
				x.byRegion[k] = list
			}
		}
		idx[pi] = x
	}
	return idx
}

// candidates returns the active popups that may match platform and region, in selection order;
// none from a nil idx (a placement or event no popup is filed under).
func (idx *index) candidates(platform, region string) []*popup.Compiled {
	if idx == nil {
		return nil
	}
	var x *platformIndex
	for i, pl := range platforms {
		if platform == pl {
			x = &idx[i]
			break
		}
	}
	if x == nil {
		return nil
	}
	if k, ok := toRegionKey(region); ok {
		if list, found := x.byRegion[k]; found {
			return list
		}
	}
	return x.anyRegion
}

func containsFold(list []string, s string) bool {
	for _, v := range list {
		if strings.EqualFold(v, s) {
			return true
		}
	}
	return false
}
