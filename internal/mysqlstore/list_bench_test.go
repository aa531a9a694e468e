package mysqlstore_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"popupsvc/internal/popup"
	"popupsvc/internal/popuplist"
	"popupsvc/internal/testenv"
)

// BenchmarkFind10k is one page of the admin list (the console's 50 rows) out of 10,000 popups,
// imported as TestConsoleListOf10000Popups imports them: the count of the filters plus the page,
// for the first page and one deep in the list, in each order the console offers.
//
//	go test -tags jsoniter -run '^$' -bench BenchmarkFind10k ./internal/mysqlstore/
func BenchmarkFind10k(b *testing.B) {
	ctx := context.Background()
	repo := newRepo(testenv.MySQL(b))
	const n = 10000
	ps := make([]popup.Popup, n)
	for i := range ps {
		p, err := popup.Input{Name: fmt.Sprintf("bulk-%05d", i), Priority: ptr(i % 100),
			Creative: popup.Creative{Title: fmt.Sprintf("Bulk %d", i), Content: "An imported popup with a realistic amount of text in it.",
				LinkURL: fmt.Sprintf("https://example.com/bulk/%d", i)},
			Targeting: &popup.TargetingInput{Platforms: []string{"ios", "android", "web"}}}.BuildWith(popup.LinkSchemes{})
		require.NoError(b, err)
		ps[i] = p
	}
	_, err := repo.Import(ctx, as("bench"), ps, popup.ImportOptions{DryRun: false})
	require.NoError(b, err)

	for _, tt := range []struct {
		name string
		q    popuplist.Query
	}{
		{name: "by id", q: popuplist.Query{}},
		{name: "newest updated first", q: popuplist.Query{Sort: popuplist.Sort{Key: popuplist.SortByUpdatedAt, Desc: true}}},
		{name: "by name, deep page", q: popuplist.Query{Sort: popuplist.Sort{Key: popuplist.SortByName}, After: &popuplist.Position{ID: 9000, Name: "bulk-08999"}}},
		{name: "by priority desc, deep page", q: popuplist.Query{Sort: popuplist.Sort{Key: popuplist.SortByPriority, Desc: true}, After: &popuplist.Position{ID: 5000, Priority: 50}}},
		{name: "state running", q: popuplist.Query{State: popup.StateRunning}},
		{name: "search title and content", q: popuplist.Query{Search: "bulk 9999"}},
		{name: "search no match", q: popuplist.Query{Search: "nothing like this"}},
	} {
		b.Run(tt.name, func(b *testing.B) {
			q := tt.q
			q.Limit = 51
			b.ReportAllocs()
			for b.Loop() {
				page, err := repo.Find(ctx, q)
				if err != nil {
					b.Fatal(err)
				}
				if page.Total == 0 && tt.name != "search no match" {
					b.Fatal("nothing matched")
				}
			}
		})
	}
}
