package snapshot

import (
	"strings"
	"time"

	"popupsvc/internal/popup"
)

// The candidate index narrows selection before any per-popup check: the active popups that can
// match a request's platform and region, in selection order. With 10,000 configs most of them
// target some other platform or region, and a request should not pay for looking at them.

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

// buildIndex files every active popup whose window has not ended by now (time only moves
// forward, so those never come back) under the platforms and regions it can match. ordered is in
// selection order and every list keeps that order.
func buildIndex(ordered []*popup.Compiled, now time.Time) index {
	var idx index
	for pi, pl := range platforms {
		x := platformIndex{byRegion: map[regionKey][]*popup.Compiled{}}
		for _, c := range ordered {
			t := &c.Popup.Targeting
			if c.Popup.EndAt != nil && !now.Before(*c.Popup.EndAt) {
				continue
			}
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

// candidates returns the active popups that may match platform and region, in selection order.
func (idx *index) candidates(platform, region string) []*popup.Compiled {
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
