package server

import (
	"context"
	"time"

	"github.com/trueup-dev/trueup/internal/changewindow"
	"github.com/trueup-dev/trueup/internal/status"
	"github.com/trueup-dev/trueup/internal/store"
)

// windowView is the notice of a resource a change window holds: the condition's message,
// and whether the caller may apply it now (an operator, the window allowing operators).
type windowView struct {
	Message     string
	Base        string
	CanOverride bool
}

// windows is the set of change windows in force (nil: none).
func (s *Server) windows() *changewindow.Set {
	if s.opts.Windows == nil {
		return nil
	}
	return s.opts.Windows()
}

// resourceWhy fills the Why section of a resource page and the notice of a held change.
// Dependencies out of scope sc keep only their names.
func (s *Server) resourceWhy(ctx context.Context, sc store.Scope, d *resourceData) error {
	tl, err := s.store.Timeline(ctx, sc, d.Res.Metadata.Namespace, d.Res.Kind, d.Res.Metadata.Name, historyLimit)
	if err != nil {
		return err
	}
	now := time.Now()
	d.Why, d.Timeline = s.blocking(tl, now), tl.Entries
	if c, ok := status.Get(d.Res.Status.Conditions, status.Reconciling); ok && c.Status == status.True && c.Reason == status.ReasonWindowClosed {
		v := s.windows().Check(windowResource(d.Res), now)
		d.Window = &windowView{Message: c.Message, Base: d.Ops.Base,
			CanOverride: d.Ops.CanOperate && !d.Ops.Suspended && v.Closed && v.AllowOperators}
	}
	return nil
}
