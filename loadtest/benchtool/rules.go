package main

// benchtool rules (make bench's run K, issue 51): half the bench popups (or half the mix's) carry
// two attribute rules and a second placement, or none of that.
//
//	benchtool rules -admin URL -token T [-metrics URL] -state on|off [-names bench|mix]
//	                put (or take off) targeting.rules and targeting.placements on bench-<even> (or
//	                mix-<even>) in one import, then wait until the API serves that version

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"
)

// benchRules are the two rules run K puts on a popup. The bench's traffic passes them: its
// requests carry attr.plan=pro or free (by uid parity) and attr.build=9.2.0 (BENCH_ATTRS=1 in
// loadtest/bench.lua and bench-revisit.lua), so a pro user holds the first rule and every user
// the second, and the answers are the ones the run without rules gets.
const benchRules = `[
	{"conditions": [{"attr": "plan", "op": "in", "value": ["pro", "team"]}]},
	{"conditions": [{"attr": "build", "op": "semver_gte", "value": "9.0.0"}]}
]`

// benchPlacements: the popups show on the homepage (the requests name no placement: home) and
// in a second placement, so the snapshot indexes them in two.
var benchPlacements = []any{"home", "checkout"}

// setRules puts benchRules and benchPlacements on the popups named prefix<even> (on), or takes
// them off (the defaults: no rules, ["home"]), and returns how many popups it edited. Other popups
// and every other field are left as they are.
func setRules(popups []map[string]any, prefix string, on bool) int {
	var rs []any
	placements := []any{"home"}
	if on {
		if err := json.Unmarshal([]byte(benchRules), &rs); err != nil {
			panic(err) // a constant
		}
		placements = benchPlacements
	} else {
		rs = []any{}
	}
	n := 0
	for _, p := range popups {
		name, _ := p["name"].(string)
		t, _ := p["targeting"].(map[string]any)
		if !evenNamed(name, prefix) || t == nil {
			continue
		}
		t["rules"], t["placements"] = rs, placements
		n++
	}
	return n
}

// rulesCmd is `benchtool rules`.
func rulesCmd(args []string) error {
	fs := flag.NewFlagSet("rules", flag.ExitOnError)
	sw := newSwitchFlags(fs, "on: two rules and a second placement on half the popups; off: none")
	names := fs.String("names", "bench", "bench: the popups of benchtool seed (bench-<even>); mix: those of benchtool mix (mix-<even>)")
	if err := sw.parse(fs, args); err != nil {
		return err
	}
	if *names != "bench" && *names != "mix" {
		return fmt.Errorf("-names must be bench or mix, got %q", *names)
	}
	a, urls := sw.admin()
	n, updated, took, err := a.reimport(urls, *sw.timeout, func(popups []map[string]any) int {
		return setRules(popups, *names+"-", *sw.state == "on")
	})
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("no popup is called %s-<even number>: the rules are on nothing", *names)
	}
	fmt.Fprintf(os.Stderr, "rules %s: %d %s popups edited (%d updated), served in %s\n", *sw.state, n, *names, updated, took.Round(time.Millisecond))
	return nil
}
