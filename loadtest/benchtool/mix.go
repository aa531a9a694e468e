package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"
)

// mix imports the popups of the realistic revisit mix (make bench's run J, issue 57) in one admin
// import: n active popups, each on 1-3 random platforms and 1-3 random regions of
// prefix0..prefix(regions-1), 30% with a 10/30/50% rollout, priorities 1-500, reshown after a day,
// hidden a week after a click. The draw is seeded, so every run imports the same list.
// loadtest/bench-revisit.lua sends its requests.
func mix(args []string) error {
	fs := flag.NewFlagSet("mix", flag.ExitOnError)
	admin := fs.String("admin", "http://127.0.0.1:18081", "admin base URL")
	token := fs.String("token", "", "admin token")
	n := fs.Int("n", 1000, "popups to import")
	nRegions := fs.Int("regions", 10, "region codes the popups spread over")
	prefix := fs.String("prefix", "m", "region codes are this prefix and a number")
	fs.Parse(args) // ExitOnError
	body, err := json.Marshal(map[string]any{"popups": mixPopups(*n, *nRegions, *prefix)})
	if err != nil {
		return err
	}
	req, _ := http.NewRequest("POST", *admin+"/admin/v1/import?dry_run=false", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+*token)
	req.Header.Set("Content-Type", "application/json")
	res, err := (&http.Client{Timeout: 2 * time.Minute}).Do(req)
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	answer, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("import: %s: %s", res.Status, answer)
	}
	fmt.Printf("mix: imported %d popups over %d regions\n", *n, *nRegions)
	return nil
}

// mixPopups is mix's list: the same for the same arguments.
func mixPopups(n, nRegions int, prefix string) []map[string]any {
	rng := rand.New(rand.NewPCG(57, 1000))
	pick := func(from []string, k int) []string { // k distinct elements of from
		out := make([]string, 0, k)
		for _, i := range rng.Perm(len(from))[:k] {
			out = append(out, from[i])
		}
		return out
	}
	codes := make([]string, nRegions)
	for i := range codes {
		codes[i] = prefix + strconv.Itoa(i)
	}
	popups := make([]map[string]any, 0, n)
	for i := range n {
		t := map[string]any{
			"platforms": pick(platforms[:], 1+rng.IntN(3)),
			"regions":   pick(codes, 1+rng.IntN(min(3, nRegions))),
		}
		if rng.IntN(10) < 3 {
			t["rollout_percent"] = [...]int{10, 30, 50}[rng.IntN(3)]
		}
		s := strconv.Itoa(i)
		popups = append(popups, map[string]any{"name": "mix-" + s, "priority": 1 + rng.IntN(500),
			"title": "Campaign " + s, "content": "A benchmark popup with a realistic amount of text in it.",
			"image_url": "https://cdn.example.com/m/" + s + ".png", "link_url": "app://campaign/" + s,
			"buttons":              []map[string]string{{"text": "Open", "link_url": "app://campaign/" + s}, {"text": "Later"}},
			"reshow_after_seconds": 86400, "click_cooldown_seconds": 7 * 86400,
			"targeting": t})
	}
	return popups
}
