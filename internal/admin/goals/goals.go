// Package goals is the admin slice of the goals (docs/CONTRACT.md §14): the conversion events
// experiments and campaigns count; their routes, the use case port and the wire shape.
package goals

import (
	"context"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"popupsvc/internal/httpapi"
	"popupsvc/internal/popup"
)

// Goals on the admin API (docs/CONTRACT.md §14): the conversion events experiments count.

// API serves the goals.
type API struct {
	*httpapi.Shared
	Goals GoalService
	// GoalsChanged, when set, is called after each committed goal write to make every instance's
	// conversion ingest see it.
	GoalsChanged func(ctx context.Context) error
}

// Register adds the goal routes: changing goals is a publisher's, as they decide verdicts.
func (a *API) Register(g *gin.RouterGroup) {
	writer := a.Require(popup.RolePublisher, "writing goals")
	g.POST("/goals", writer, a.createGoal)
	g.GET("/goals", a.listGoals)
	g.GET("/goals/:key", a.getGoal)
	g.PUT("/goals/:key", writer, a.updateGoal)
	g.DELETE("/goals/:key", writer, a.deleteGoal)
	g.GET("/goals/:key/history", a.goalHistory)
}

// GoalService is the goal use case (manage.Goals).
type GoalService interface {
	Goal(ctx context.Context, key string) (popup.Goal, error)
	List(ctx context.Context) ([]popup.Goal, error)
	History(ctx context.Context, key string) ([]popup.GoalChange, error)
	Create(ctx context.Context, actor popup.Actor, g popup.Goal) (popup.Goal, error)
	Update(ctx context.Context, actor popup.Actor, g popup.Goal, ifVersion []int64) (popup.Goal, error)
	Delete(ctx context.Context, actor popup.Actor, key string, ifVersion []int64) (popup.Goal, error)
}

// goalWire is a goal on the wire.
type goalWire struct {
	Key         string    `json:"key"`
	Name        string    `json:"name"`
	WindowHours int64     `json:"window_hours"`
	Value       string    `json:"value"`
	ValueCap    *float64  `json:"value_cap"`
	Version     int64     `json:"version"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

func goalToWire(g popup.Goal) goalWire {
	return goalWire{Key: g.Key, Name: g.Name, WindowHours: int64(g.Window / time.Hour), Value: string(g.Value),
		ValueCap: g.ValueCap, Version: g.Version, CreatedAt: g.CreatedAt.UTC(), UpdatedAt: g.UpdatedAt.UTC()}
}

// goalInput is the body of a create or an update: window_hours defaults to 72, value to none and
// value_cap to null (no cap); the server's fields, as GET answers them, may be sent back and are
// ignored.
type goalInput struct {
	Key         *string    `json:"key"`
	Name        *string    `json:"name"`
	WindowHours *int64     `json:"window_hours"`
	Value       *string    `json:"value"`
	ValueCap    *float64   `json:"value_cap"`
	Version     *int64     `json:"version"`
	CreatedAt   *time.Time `json:"created_at"`
	UpdatedAt   *time.Time `json:"updated_at"`
}

type goalChangeWire struct {
	Version int64     `json:"version"`
	At      time.Time `json:"at"`
	Actor   string    `json:"actor"`
	Role    *string   `json:"role"`
	Action  string    `json:"action"`
	Before  *goalWire `json:"before"`
	After   *goalWire `json:"after"`
}

// readGoal reads the body of a create (pathKey "") or of an update of pathKey, whose body may
// leave the key out or must repeat it.
func readGoal(c *gin.Context, pathKey string) (popup.Goal, error) {
	var in goalInput
	if aerr := httpapi.ReadSmallJSON(c, 16<<10, &in); aerr != nil {
		return popup.Goal{}, aerr
	}
	g := popup.Goal{Key: pathKey, Window: popup.DefaultWindowHours * time.Hour, Value: popup.GoalValueNone}
	var fields []popup.FieldError
	switch {
	case pathKey == "" && in.Key == nil:
		fields = append(fields, popup.FieldError{Field: "key", Message: "is required"})
	case pathKey == "":
		g.Key = *in.Key
	case in.Key != nil && *in.Key != pathKey:
		fields = append(fields, popup.FieldError{Field: "key", Message: "must be " + pathKey + ", the key in the path, or be left out: a goal's key never changes"})
	}
	if in.Name == nil {
		fields = append(fields, popup.FieldError{Field: "name", Message: "is required"})
	} else {
		g.Name = *in.Name
	}
	if in.WindowHours != nil {
		if h := *in.WindowHours; h < popup.MinGoalWindowHours || h > popup.MaxGoalWindowHours {
			g.Window = -1 // Validate names it
		} else {
			g.Window = time.Duration(h) * time.Hour
		}
	}
	if in.Value != nil {
		g.Value = popup.GoalValue(*in.Value)
	}
	g.ValueCap = in.ValueCap
	if len(fields) > 0 {
		return g, &popup.ValidationError{Of: "goal", Fields: fields}
	}
	return g, g.Validate()
}

// writeGoal answers one goal with its version as the ETag.
func writeGoal(c *gin.Context, status int, g popup.Goal) {
	c.Header("ETag", httpapi.ETag(g.Version))
	c.JSON(status, goalToWire(g))
}

// goalWritten logs a committed goal write and tells every instance, whose conversion ingest
// checks the goals (GoalsChanged).
func (a *API) goalWritten(c *gin.Context, action popup.GoalAction, g popup.Goal) {
	by := httpapi.Actor(c)
	a.Log.Info("goal written", "operator", by.Name, "role", by.Role.String(), "action", string(action), "goal", g.Key, "version", g.Version)
	if a.GoalsChanged != nil {
		if err := a.GoalsChanged(c.Request.Context()); err != nil {
			a.Log.Warn("publish goals; instances see the change at the next reload", "err", err)
		}
	}
}

func (a *API) createGoal(c *gin.Context) {
	g, err := readGoal(c, "")
	if err != nil {
		a.Fail(c, err)
		return
	}
	stored, err := a.Goals.Create(c.Request.Context(), httpapi.Actor(c), g)
	if err != nil {
		a.Fail(c, err)
		return
	}
	a.goalWritten(c, popup.GoalCreate, stored)
	writeGoal(c, http.StatusCreated, stored)
}

func (a *API) listGoals(c *gin.Context) {
	all, err := a.Goals.List(c.Request.Context())
	if err != nil {
		a.Fail(c, err)
		return
	}
	out := make([]goalWire, len(all))
	for i, g := range all {
		out[i] = goalToWire(g)
	}
	c.JSON(http.StatusOK, gin.H{"goals": out})
}

// goalKey is the path's goal key, checked before any store is asked.
func goalKey(c *gin.Context) (string, *httpapi.Error) {
	key := c.Param("key")
	if !popup.ValidGoalKey(key) {
		return "", httpapi.NewError(httpapi.Problem{Status: http.StatusBadRequest, Code: "invalid_goal_key", Message: "goal key must be " + popup.GoalKeyRule,
			Fields: []popup.FieldError{{Field: "key", Message: "must be " + popup.GoalKeyRule}}})
	}
	return key, nil
}

func (a *API) getGoal(c *gin.Context) {
	key, aerr := goalKey(c)
	if aerr != nil {
		a.Fail(c, aerr)
		return
	}
	g, err := a.Goals.Goal(c.Request.Context(), key)
	if err != nil {
		a.Fail(c, err)
		return
	}
	writeGoal(c, http.StatusOK, g)
}

func (a *API) updateGoal(c *gin.Context) {
	key, aerr := goalKey(c)
	if aerr != nil {
		a.Fail(c, aerr)
		return
	}
	g, err := readGoal(c, key)
	if err != nil {
		a.Fail(c, err)
		return
	}
	stored, err := a.Goals.Update(c.Request.Context(), httpapi.Actor(c), g, httpapi.IfMatch(c))
	if err != nil {
		a.Fail(c, err)
		return
	}
	a.goalWritten(c, popup.GoalUpdate, stored)
	writeGoal(c, http.StatusOK, stored)
}

func (a *API) deleteGoal(c *gin.Context) {
	key, aerr := goalKey(c)
	if aerr != nil {
		a.Fail(c, aerr)
		return
	}
	g, err := a.Goals.Delete(c.Request.Context(), httpapi.Actor(c), key, httpapi.IfMatch(c))
	if err != nil {
		a.Fail(c, err)
		return
	}
	a.goalWritten(c, popup.GoalDelete, g)
	writeGoal(c, http.StatusOK, g)
}

func (a *API) goalHistory(c *gin.Context) {
	key, aerr := goalKey(c)
	if aerr != nil {
		a.Fail(c, aerr)
		return
	}
	changes, err := a.Goals.History(c.Request.Context(), key)
	if err != nil {
		a.Fail(c, err)
		return
	}
	out := make([]goalChangeWire, len(changes))
	for i, ch := range changes {
		out[i] = goalChangeWire{Version: ch.Version, At: ch.At.UTC(), Actor: ch.Actor.Name, Action: string(ch.Action)}
		if r := ch.Actor.Role.String(); r != "" {
			out[i].Role = &r
		}
		if ch.Before != nil {
			w := goalToWire(*ch.Before)
			out[i].Before = &w
		}
		if ch.After != nil {
			w := goalToWire(*ch.After)
			out[i].After = &w
		}
	}
	c.JSON(http.StatusOK, gin.H{"changes": out})
}
