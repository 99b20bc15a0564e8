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
// reconcile_throughput too, the two drained in the order A B B A and each figure the mean of
// its two drains: each drain leaves the tables a little larger, and a fixed order would
// charge that to the second case.
func (b *bench) windowsThroughput(ctx context.Context, baseline bool) error {
	type windowCase struct {
		name    string
		windows []changewindow.Window
		rates   []float64
	}
	with := &windowCase{name: "reconcile_throughput_windows10", windows: idleWindows()}
	order := []*windowCase{with}
	if baseline {
		without := &windowCase{name: "reconcile_throughput"}
		order = []*windowCase{without, with, with, without}
	}
	for _, c := range order {
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
		c.rates = append(c.rates, rate)
	}
	for _, c := range order[:min(len(order), 2)] {
		var sum float64
		for _, r := range c.rates {
			sum += r
		}
		record(c.name, sum/float64(len(c.rates)), "1/s", "≥ 5000", atLeast(5000))
	}
	return nil
}
