package results_test

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"popupsvc/internal/apiserver/apitest"
	"popupsvc/internal/config"
	"popupsvc/internal/popup"
	"popupsvc/internal/redisstore"
	"popupsvc/internal/testenv"
)

// The harness of the simulations through the real service (issue 36, item 7): a popup-api and a
// popup-worker in this process (apiserver.Run and workerserver.Run, what the binaries run) on the
// test MariaDB and Redis, and N simulated users who each ask GET /api/v1/popup once over loopback,
// then act on what they were shown as their behaviour says: a click or close sent with the
// decision_id they got, and conversions that the app's backend reports through
// POST /api/v1/conversions/batch. Then the worker drains, and the test reads what the admin API
// answers. A case is a popup set up through the admin API, a plan of its users, a behaviour and
// its checks:
//
//	sim := newServiceSim(t, users)
//	id := sim.api.createPopup(t, …)                          // and start its experiment
//	salt := sim.startExperiment(t, id)                       // the phase's salt, the server's
//	users, err := planUsers(groups, simArmGroup(&exp))       // exactly groups[i].Users of each
//	visits, err := sim.drive(t.Context(), users, behave)     // every request to 127.0.0.1
//	sim.drain(t)                                             // the worker has written everything
//	got := sim.experimentResults(t, id)
//
// Every outcome a case checks is a pure function of the harness's seed, whatever salt the service
// draws: the plan drives an exact number of users in each group (an arm, "holdout"/"others": any
// key computed from a uid with the code the service runs), and a user's behaviour is drawn from a
// generator seeded with (seed, its group, its rank in the group), not with its uid. The salt only
// decides which uids fill the groups; the service still assigns them, and a case checks each
// answer against the group the plan put the user in.

// simShown is what a simulated user got from GET /api/v1/popup.
type simShown struct {
	PopupID    int64  // 0: no popup
	Variant    string // the experiment variant shown; "" for none
	DecisionID string
	Body       json.RawMessage // the whole answer, for what a case reads beyond these
}

// simConversion is one conversion of a simulated user, as its app's backend reports it.
type simConversion struct {
	Goal  string
	Value float64
}

// simDoes is what a simulated user does after its answer.
type simDoes struct {
	// Action is "click", "close" or "" (nothing): sent for the popup shown, with its decision_id.
	Action string
	// Conversions are reported after the answer (their time is when the service receives them,
	// so after the user's exposure), in batches of the harness's backend.
	Conversions []simConversion
}

// simBehaviour is a simulated population: what user u does given what it was shown. rng is seeded
// with the harness's seed, u's group and u's rank in it alone (simUser.rng), so the user of a
// group's rank draws the same numbers in every run whatever uid fills it and whatever order the
// clients take. An error (an answer the case knows to be wrong, such as one for another group
// than the plan's) stops the drive.
type simBehaviour func(u simUser, shown simShown, rng *rand.Rand) (simDoes, error)

// simVisit is one user's visit as the harness drove it.
type simVisit struct {
	User  simUser
	Shown simShown
	Does  simDoes
}

// simGroup is a group of the users a simulation drives, and how many of them it drives: Key is
// anything the test computes from a uid with the code the service runs (an experiment's arm,
// "holdout" or "others" of the global holdout, …).
type simGroup struct {
	Key   string
	Users int
}

// simUser is a user of the plan: its uid, the group the plan counts it in and its rank there (0,
// 1, … in the order of the candidates).
type simUser struct {
	UID   string
	Group string
	Rank  int
}

// simCandidatesPerUser bounds planUsers' search: a group that takes under 0.1% of the candidates
// is a broken plan or a broken assignment, not bad luck.
const simCandidatesPerUser = 1000

// planUsers picks the users a simulation drives: the candidates sim-0, sim-1, … in order, each
// counted in group(uid) while that group has fewer than its planned Users (a candidate of a full
// group, or of a key not in groups, is skipped), until every group is full. The plan is then
// exactly groups[i].Users users in each group whatever salt the service drew, in the order of
// their uids (the groups interleaved as real traffic interleaves them). Bounded by
// simCandidatesPerUser candidates per planned user; it errs naming the groups left short.
func planUsers(groups []simGroup, group func(uid string) string) ([]simUser, error) {
	want := make(map[string]int, len(groups))
	total := 0
	for _, g := range groups {
		if _, dup := want[g.Key]; dup || g.Users < 0 {
			return nil, fmt.Errorf("plan: group %q twice or with %d users", g.Key, g.Users)
		}
		want[g.Key] = g.Users
		total += g.Users
	}
	users := make([]simUser, 0, total)
	have := make(map[string]int, len(groups))
	for n := 0; len(users) < total; n++ {
		if n >= simCandidatesPerUser*max(total, 1) {
			return nil, fmt.Errorf("plan: %d candidates filled %v of %v", n, have, want)
		}
		uid := "sim-" + strconv.Itoa(n)
		k := group(uid)
		if have[k] >= want[k] {
			continue
		}
		users = append(users, simUser{UID: uid, Group: k, Rank: have[k]})
		have[k]++
	}
	return users, nil
}

// planByWeights splits users into groups in proportion to weights, by largest remainder: the
// exact split when users × weight is whole (5,000 users at 34/33/33: 1,700, 1,650, 1,650).
func planByWeights(users int, keys []string, weights []int) []simGroup {
	sum := 0
	for _, w := range weights {
		sum += w
	}
	groups := make([]simGroup, len(keys))
	rems := make([]int, len(keys))
	left := users
	for i, k := range keys {
		groups[i] = simGroup{Key: k, Users: users * weights[i] / sum}
		rems[i] = users * weights[i] % sum
		left -= groups[i].Users
	}
	for ; left > 0; left-- {
		best := 0
		for i := range rems {
			if rems[i] > rems[best] {
				best = i
			}
		}
		groups[best].Users++
		rems[best] = -1
	}
	return groups
}

// simArmGroup is the group of a uid in experiment e's current phase as the service assigns it
// (popup.Assigner: coverage, variants and control): the arm's key, or simOutside.
func simArmGroup(e *popup.Experiment) func(uid string) string {
	as := popup.NewAssigner(e)
	return func(uid string) string {
		if arm := as.Assign(uid); arm >= 0 {
			return e.ArmKey(arm)
		}
		return simOutside
	}
}

// simOutside is the group of the users an experiment leaves out (outside its coverage).
const simOutside = "outside"

// simHoldoutGroup is the group of a uid in the global holdout's running phase h as the service
// holds users out (popup.HoldoutCheck, docs/CONTRACT.md §15): popup.HoldoutHeld's key or
// popup.HoldoutOthers'. A case that also runs an experiment can nest the two groups: the holdout's
// for the users it holds, simArmGroup's for the others.
func simHoldoutGroup(h popup.Holdout) func(uid string) string {
	check := h.Check()
	return func(uid string) string {
		if check.Holds(uid) {
			return string(popup.HoldoutHeld)
		}
		return string(popup.HoldoutOthers)
	}
}

// rng is u's behaviour's generator: seeded with the harness's seed and u's group (FNV-1a, so the
// same in every run) and with u's rank, never with its uid, which the salt decides.
func (u simUser) rng(seed uint64) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(u.Group))
	return rand.New(rand.NewPCG(seed^h.Sum64(), uint64(u.Rank)))
}

// serviceSim is a popup-api and a popup-worker on the test MariaDB and Redis, and the settings of
// the simulated clients that drive them.
type serviceSim struct {
	api *apitest.Instance
	cfg config.Config
	// Clients is how many users are driven at once (8).
	Clients int
	// Seed seeds every user's generator with its group and rank (23).
	Seed uint64
	// Query is the GET's query after the uid ("platform=web&app_version=1").
	Query string
	// Batch is how many conversions the backend sends in one request (500, the route's most).
	Batch int
	// ingestKey vouches for the backend's conversion values (docs/CONTRACT.md §14).
	ingestKey string
}

// newServiceSim starts a popup-api (a known-users filter sized for users) and a popup-worker,
// both stopped when the test ends. A simulation fails on any degraded answer, and what it checks
// is the counting, not the latency: its budgets are generous enough that a Redis call delayed by
// a loaded machine's scheduler (beside other packages' tests, under -race) does not degrade an
// answer, which a 1 s Redis timeout did at a load average of 20.
func newServiceSim(t *testing.T, users int) *serviceSim {
	t.Helper()
	cfg := apitest.Config(t)
	cfg.KnownUsers = 2 * users
	cfg.RedisTimeout, cfg.RequestBudget = 5*time.Second, 10*time.Second
	api := apitest.Start(t, cfg, nil)
	apitest.StartWorker(t, cfg)
	return &serviceSim{api: api, cfg: cfg, Clients: 8, Seed: 23, Query: "platform=web&app_version=1", Batch: 500, ingestKey: api.IngestKey(t)}
}

// startExperiment starts popup id's experiment through the admin API and returns the salt the
// server drew for its phase (server-managed, docs/CONTRACT.md §10: a case plans its users with it).
func (s *serviceSim) startExperiment(t *testing.T, id int64) string {
	t.Helper()
	res := s.api.AdminDo(t, http.MethodPost, "/admin/v1/popups/"+apitest.Itoa(id)+"/experiment/start", nil)
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	exp, _ := res.Body["experiment"].(map[string]any)
	require.NotNil(t, exp, res.Raw)
	require.Equal(t, "running", exp["status"], res.Raw)
	salt, _ := exp["salt"].(string)
	require.NotEmpty(t, salt, res.Raw)
	return salt
}

// drive sends users through the public API in their order, Clients at a time: each asks once for
// a popup and does what behave says, its action at once, its conversions through the backend's
// batches (each client's own, sent when full and at the end). It returns every visit, in the
// users' order, once every request has been answered 2xx (and not degraded): everything the users
// did is then queued. Bounded: len(users) requests and the conversions, within 15 minutes.
func (s *serviceSim) drive(ctx context.Context, users []simUser, behave simBehaviour) ([]simVisit, error) {
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: s.Clients}}
	defer client.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(ctx, 15*time.Minute)
	defer cancel()
	public := "http://" + s.api.Public
	visits := make([]simVisit, len(users))
	next := make(chan int)
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		defer close(next)
		for n := range users {
			select {
			case next <- n:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	})
	for range s.Clients {
		g.Go(func() error {
			backend := simBackend{call: func(body string) error {
				return simCallAs(ctx, client, s.ingestKey, http.MethodPost, public+"/api/v1/conversions/batch", body, nil)
			}, size: s.Batch}
			for n := range next {
				v, err := s.visit(ctx, client, public, users[n], behave)
				if err != nil {
					return fmt.Errorf("%s (%s #%d): %w", users[n].UID, users[n].Group, users[n].Rank, err)
				}
				for k, c := range v.Does.Conversions {
					if err := backend.add(v.User.UID, v.User.UID+"-c"+strconv.Itoa(k), c); err != nil {
						return err
					}
				}
				visits[n] = v
			}
			return backend.flush()
		})
	}
	return visits, g.Wait()
}

// visit is user u's request, behaviour and action.
func (s *serviceSim) visit(ctx context.Context, client *http.Client, public string, u simUser, behave simBehaviour) (simVisit, error) {
	v := simVisit{User: u}
	var ans struct {
		Popup *struct {
			ID int64 `json:"id"`
		} `json:"popup"`
		DecisionID string `json:"decision_id"`
		Variant    string `json:"variant"`
	}
	var raw json.RawMessage
	if err := simCall(ctx, client, http.MethodGet, public+"/api/v1/popup?uid="+u.UID+"&"+s.Query, "", &raw); err != nil {
		return v, err
	}
	if err := json.Unmarshal(raw, &ans); err != nil {
		return v, err
	}
	v.Shown = simShown{Variant: ans.Variant, DecisionID: ans.DecisionID, Body: raw}
	if ans.Popup != nil {
		v.Shown.PopupID = ans.Popup.ID
	}
	var err error
	if v.Does, err = behave(u, v.Shown, u.rng(s.Seed)); err != nil {
		return v, err
	}
	if a := v.Does.Action; a != "" {
		if v.Shown.PopupID == 0 {
			return v, fmt.Errorf("a %s without a popup shown", a)
		}
		body := `{"uid":"` + u.UID + `","action":"` + a + `","decision_id":"` + v.Shown.DecisionID + `"}`
		if err := simCall(ctx, client, http.MethodPost, public+"/api/v1/popups/"+strconv.FormatInt(v.Shown.PopupID, 10)+"/actions", body, nil); err != nil {
			return v, fmt.Errorf("%s: %w", a, err)
		}
	}
	return v, nil
}

// simBackend batches conversions as an app's backend does, up to size a request.
type simBackend struct {
	call    func(body string) error
	size    int
	pending []map[string]any
}

func (b *simBackend) add(uid, eventID string, c simConversion) error {
	b.pending = append(b.pending, map[string]any{"uid": uid, "goal": c.Goal, "event_id": eventID, "value": c.Value})
	if len(b.pending) < b.size {
		return nil
	}
	return b.flush()
}

func (b *simBackend) flush() error {
	if len(b.pending) == 0 {
		return nil
	}
	body, err := json.Marshal(map[string]any{"conversions": b.pending})
	if err != nil {
		return err
	}
	b.pending = b.pending[:0]
	if err := b.call(string(body)); err != nil {
		return fmt.Errorf("conversions batch: %w", err)
	}
	return nil
}

// simCall sends one request and decodes a 2xx answer into out (nil: discard it).
func simCall(ctx context.Context, client *http.Client, method, url, body string, out any) error {
	return simCallAs(ctx, client, "", method, url, body, out)
}

// simCallAs is simCall with a bearer token (an ingest key; "" for none).
func simCallAs(ctx context.Context, client *http.Client, token, method, url, body string, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		return err
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := client.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return err
	}
	if res.StatusCode/100 != 2 || res.Header.Get("X-Popup-Degraded") != "" {
		return fmt.Errorf("%s %s: %d %s (degraded %q)", method, url, res.StatusCode, raw, res.Header.Get("X-Popup-Degraded"))
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(raw, out)
}

// drain waits until the worker has written every queued event: no shard holds an event waiting or
// claimed and not yet acknowledged (the worker acknowledges a batch once its transaction has
// committed), and none was dead-lettered. Bounded by 5 minutes.
func (s *serviceSim) drain(t *testing.T) {
	t.Helper()
	keys := redisstore.Keys{Prefix: s.cfg.RedisPrefix, Shards: s.cfg.Shards()}
	q := redisstore.NewQueue(testenv.Redis(t), keys, s.cfg.WorkerLease)
	var left, dead int64
	apitest.Eventually(t, 5*time.Minute, "the worker drains the queue", func() bool {
		left, dead = 0, 0
		for shard := range keys.Shards {
			st, err := q.Stats(t.Context(), shard)
			require.NoError(t, err)
			left += st.Length + st.ProcessingTotal()
			dead += st.Dead
		}
		return left == 0
	})

	require.Zero(t, dead, "dead-lettered events")
}

// expComparison is a rate's comparison with the baseline as the results answer it (docs/CONTRACT.md
// §10), null where undefined: an arm's click-through rate's, a goal's conversion rate's.
type expComparison struct {
	Difference   *float64    `json:"difference"`
	DifferenceCI *[2]float64 `json:"difference_ci"`
	PAdjusted    *float64    `json:"p_adjusted"`
	Lift         *float64    `json:"lift"`
	LiftCI       *[2]float64 `json:"lift_ci"`
	SequentialP  *float64    `json:"sequential_p"`
}

// expGoal is one arm's results on one goal (docs/CONTRACT.md §14).
type expGoal struct {
	Goal           string      `json:"goal"`
	ConvertedUsers int64       `json:"converted_users"`
	Conversions    int64       `json:"conversions"`
	ValueSum       float64     `json:"value_sum"`
	Rate           *float64    `json:"rate"`
	RateCI         *[2]float64 `json:"rate_ci"`
	expComparison
	MeanValue *float64 `json:"mean_value"`
}

// expResults is the part of GET …/experiment/results (docs/CONTRACT.md §10, §14) the tests read.
type expResults struct {
	PopupID      int64   `json:"popup_id"`
	Phase        int     `json:"phase"`
	Salt         string  `json:"salt"`
	Status       string  `json:"status"`
	Baseline     string  `json:"baseline"`
	GoalBaseline string  `json:"goal_baseline"`
	PrimaryGoal  *string `json:"primary_goal"`
	Arms         []struct {
		Key          string      `json:"key"`
		Weight       int         `json:"weight"`
		Control      bool        `json:"control"`
		ExposedUsers int64       `json:"exposed_users"`
		ClickedUsers int64       `json:"clicked_users"`
		Exposures    int64       `json:"exposures"`
		Clicks       int64       `json:"clicks"`
		Closes       int64       `json:"closes"`
		CTR          *float64    `json:"ctr"`
		CTRCI        *[2]float64 `json:"ctr_ci"`
		expComparison
		Goals []expGoal `json:"goals"`
	} `json:"arms"`
	Days []struct {
		ExposedUsers int64 `json:"exposed_users"`
	} `json:"days"`
	SRM struct {
		ChiSquare float64 `json:"chi_square"`
		DF        int     `json:"df"`
		P         float64 `json:"p"`
		Alarm     bool    `json:"alarm"`
	} `json:"srm"`
	Verdict struct {
		Winner   *string `json:"winner"`
		Reason   string  `json:"reason"`
		Metric   string  `json:"metric"`
		Baseline string  `json:"baseline"`
		Leader   *string `json:"leader"`
		Summary  string  `json:"summary"`
		Why      string  `json:"why"`
		Shipped  *struct {
			Variant string `json:"variant"`
		} `json:"shipped"`
	} `json:"verdict"`
}

// experimentResults reads popup id's experiment results (the current phase).
func (s *serviceSim) experimentResults(t *testing.T, id int64) expResults {
	t.Helper()
	res := s.api.AdminDo(t, http.MethodGet, "/admin/v1/popups/"+apitest.Itoa(id)+"/experiment/results", nil)
	require.Equal(t, http.StatusOK, res.Status, res.Raw)
	var got expResults
	require.NoError(t, json.Unmarshal([]byte(res.Raw), &got), res.Raw)
	return got
}

// measure starts a stopwatch of this process's CPU (popup-api, popup-worker and the clients; not
// MariaDB's or Redis's) and of the wall clock; the function it returns reads both since then.
func measure(t testing.TB) func() (cpu, wall time.Duration) {
	cpu0, wall0 := testenv.ProcessCPU(t), time.Now()
	return func() (time.Duration, time.Duration) { return testenv.ProcessCPU(t) - cpu0, time.Since(wall0) }
}
