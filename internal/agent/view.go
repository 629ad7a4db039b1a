package agent

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/wire"
)

// View is one of the agent's views of the requests it decodes: it is fed
// every request, exported as Prometheus series and served as JSON at
// /<name> (as the kscope command of the same name prints it with
// --format json).
type View interface {
	// Add counts one request; it is called from the goroutine that
	// decodes, for every request, so it must be cheap.
	Add(r *event.Request)
	// Collector exports the view's series (findings included).
	Collector() prometheus.Collector
	// Report is the view as of now, encoded as JSON at /<name>.
	Report(now time.Time) any
}

// live is what a view package's Live offers the agent: a request
// counted, the view as of now.
type live[R any] interface {
	Add(r *event.Request)
	Report(now time.Time) R
}

// liveView is the View of a view package's Live, with the collector of
// its series.
type liveView[R any] struct {
	live      live[R]
	collector prometheus.Collector
}

func (v liveView[R]) Add(r *event.Request)            { v.live.Add(r) }
func (v liveView[R]) Collector() prometheus.Collector { return v.collector }
func (v liveView[R]) Report(now time.Time) any        { return v.live.Report(now) }

// viewSpec is a view as it registers itself, in the file that defines it.
type viewSpec struct {
	// Name is its name in --views and its path, /<name>.
	Name string
	// Needs are the fields of the decoded requests only it reads among
	// the decoder's extras: they are decoded while it is on.
	Needs wire.Extras
	// New makes the view from the agent's configuration.
	New func(cfg *Config) View
}

// registeredViews are the views by name. Each view's file adds itself in
// its init (registerView), as node_exporter's collectors do; nothing
// changes it after.
var registeredViews = map[string]viewSpec{}

// registerView adds a view; a name registered twice is a programming
// error, caught by every test.
func registerView(s viewSpec) {
	if _, dup := registeredViews[s.Name]; dup || s.Name == "" || s.Name == ViewsNone {
		panic("agent: view registered twice or badly named: " + s.Name)
	}
	registeredViews[s.Name] = s
}

// ViewsNone is what --views takes for no view at all.
const ViewsNone = "none"

// ViewNames are the registered views' names, sorted.
func ViewNames() []string {
	return slices.Sorted(maps.Keys(registeredViews))
}

// CheckViews refuses a list of views naming one not registered, or
// naming ViewsNone with another.
func CheckViews(names []string) error {
	for _, n := range names {
		if n == ViewsNone {
			if len(names) > 1 {
				return fmt.Errorf("%s goes alone", ViewsNone)
			}
			continue
		}
		if _, ok := registeredViews[n]; !ok {
			return fmt.Errorf("unknown view %q (known: %s, or %s)", n, strings.Join(ViewNames(), ", "), ViewsNone)
		}
	}
	return nil
}

// enabledView is a view the agent feeds.
type enabledView struct {
	name string
	View
}

// newViews makes the views cfg.Views names (nil: every registered one;
// ViewsNone or an empty list: none), in name order, and the decoder's
// extras they need.
func newViews(cfg *Config) ([]enabledView, wire.Extras, error) {
	names := cfg.Views
	if names == nil {
		names = ViewNames()
	}
	if err := CheckViews(names); err != nil {
		return nil, 0, fmt.Errorf("agent: %w", err)
	}
	var views []enabledView
	var needs wire.Extras
	for _, name := range ViewNames() { // in name order, each once
		if !slices.Contains(names, name) {
			continue
		}
		spec := registeredViews[name]
		views = append(views, enabledView{name: name, View: spec.New(cfg)})
		needs |= spec.Needs
	}
	return views, needs, nil
}

// view returns the enabled view called name, or nil.
func (a *Agent) view(name string) View {
	for _, v := range a.views {
		if v.name == name {
			return v.View
		}
	}
	return nil
}

// handleViews serves each registered view at /<name>: its JSON when it
// is on, a 404 saying so when it is off.
func (a *Agent) handleViews(mux *http.ServeMux) {
	for _, name := range ViewNames() {
		v := a.view(name)
		if v == nil {
			mux.HandleFunc("/"+name, func(w http.ResponseWriter, _ *http.Request) {
				http.Error(w, fmt.Sprintf("the %s view is off (kscope agent --views)", name), http.StatusNotFound)
			})
			continue
		}
		mux.HandleFunc("/"+name, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			_ = enc.Encode(v.Report(time.Now()))
		})
	}
}

// viewLinks are the links to the enabled views on the index page.
func (a *Agent) viewLinks() string {
	var b strings.Builder
	for _, v := range a.views {
		fmt.Fprintf(&b, ` <a href="/%s">/%s</a>`, v.name, v.name)
	}
	return b.String()
}
