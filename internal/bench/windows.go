package main

import (
	"context"
	"fmt"
	"time"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/actions/noop"
	"github.com/trueup-dev/trueup/internal/changewindow"
	"github.com/trueup-dev/trueup/internal/policy"
)

// idleWindows are ten deny windows, always open (hourly, for two hours), of which none
// selects the bench's resources (namespaces ns00–ns19): each change pays their matching.
func idleWindows() []changewindow.Window {
	var ws []changewindow.Window
	for i := range 10 {
		ws = append(ws, changewindow.Window{Name: fmt.Sprintf("idle-%d", i), Kind: changewindow.Deny, Schedule: "@hourly",
			Duration: 2 * time.Hour, TimeZone: "Europe/Paris", Match: policy.Match{Namespaces: []string{fmt.Sprintf("team-%d", i)}}})
	}
	return ws
}

// windowsThroughput is reconcile_throughput_windows10 (20,000 resources, as
// reconcile_throughput, with ten open change windows selecting none); with baseline,
// reconcile_throughput first, to compare within one run.
func (b *bench) windowsThroughput(ctx context.Context, baseline bool) error {
	type windowCase struct {
		name    string
		windows []changewindow.Window
	}
	cases := []windowCase{{"reconcile_throughput_windows10", idleWindows()}}
	if baseline {
		cases = append([]windowCase{{"reconcile_throughput", nil}}, cases...)
	}
	for _, c := range cases {
		b.windows = nil
		if c.windows != nil {
			var err error
			if b.windows, err = changewindow.Compile(c.windows); err != nil {
				return err
			}
		}
		act, _ := noop.New(nil, actions.Env{Name: "act", Logger: b.log})
		rate, err := b.gatedRate(ctx, 20000, nil, act)
		b.windows = nil
		if err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
		record(c.name, rate, "1/s", "≥ 5000", atLeast(5000))
	}
	return nil
}
