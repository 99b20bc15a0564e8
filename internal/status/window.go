package status

// Change windows (internal/changewindow) and drift policies.
const (
	// ReasonWindowClosed: Reconciling=True while a change window holds the resource's
	// change (an apply, a delete or a drift correction); the message names the window, its
	// kind and when the change may proceed (RFC 3339). The work is due then.
	ReasonWindowClosed = "WindowClosed"

	// Drifted is set True on a resource whose type's drift mode is detect or notify when a
	// resync finds drift that is not ignored: the message lists what drifted (JSON pointers
	// into the spec, with the expected and found values when the action gives them). It is
	// removed once a resync finds the resource in sync or a reconcile succeeds.
	Drifted = "Drifted"
	// ReasonDriftDetected: Drifted=True, drift found and left in place (drift mode detect or
	// notify).
	ReasonDriftDetected = "DriftDetected"
)
