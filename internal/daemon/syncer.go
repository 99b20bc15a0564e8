package daemon

import "github.com/trueup-dev/trueup/internal/syncer"

// Syncer is the syncer of source running on this replica (nil: none): its SyncOnce syncs
// now, as a poll does. The e2e tests and the bench drive syncs through it.
func (rt *Daemon) Syncer(source string) *syncer.Syncer { return rt.syncer(source) }
