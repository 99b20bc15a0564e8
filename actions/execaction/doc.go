// Package execaction owns the "exec" action kind: it runs a trusted command from the
// controller config once per call and speaks the exec protocol trueup.dev/exec/v1 with it
// (DESIGN §6), so that actions can be written in any language.
//
// # Config
//
//	{"command": ["./scripts/provision.sh", "arg"], "timeout": "5m", "env": {"K": "V"}, "dir": ".",
//	 "lockDir": "/var/lib/trueup/exec-locks", "inheritEnv": false, "plan": false}
//
// command is required. A relative command path that contains a slash is resolved against
// the folder of the controller config (actions.Env.BaseDir); a bare name is looked up in
// PATH. dir is the working directory, relative to BaseDir, and defaults to BaseDir. timeout
// bounds each call (default 5m; "0s" also means the default).
//
// A command gets only what it is given: PATH, HOME, LANG and TMPDIR (each when trueup has
// it), PWD (its working directory), the config env and the protocol's TRUEUP_ variables.
// Nothing else of trueup's environment reaches it, so that a host credential the config
// never names cannot be read by the command, returned as an output, or passed on; whatever a
// command needs (a cloud region, SSL_CERT_FILE, a token through ${VAR}) goes in env.
// inheritEnv: true is the explicit opt-in to the controller's whole environment instead,
// still without its TRUEUP_ variables (TRUEUP_DATABASE_URL and the like configure trueup,
// not the command); config env is added on top of either. Config errors name
// env keys, never values. The value of an env variable whose name looks secret (contains,
// in any case, TOKEN, SECRET, PASSWORD, PASSWD, PASS, KEY, CREDENTIAL, AUTH, CERT or
// PRIVATE) is redacted as *** from the command's stderr, messages, conditions and outputs
// (strings and keys at any depth; values shorter than 6 bytes excepted: they would match
// ordinary words), and the instance hands these values to the controller
// (actions.SecretHolder), which scrubs them from what every plugin returns; other values
// (DEMO_DIR, REGION) are settings, which messages may quote. Whatever its name, a value that
// came from a ${VAR} is scrubbed by the controller. lockDir holds the resource locks (below),
// relative to BaseDir; it defaults to trueup-exec-locks-UID in the temp folder, is created
// 0700, and must not be writable by others. plan: true declares that the command implements
// the plan operation (below). Unknown fields are errors.
//
// # Protocol trueup.dev/exec/v1
//
// Each call (reconcile, delete, observe) starts the command once. Its stdin holds one JSON
// document:
//
//	{"protocol": "trueup.dev/exec/v1",
//	 "operation": "reconcile",      // or "delete", "observe"
//	 "resource": {"apiVersion", "kind", "namespace", "name", "uid", "generation", "spec",
//	              "labels", "annotations", "source", "revision",
//	              "fallbackRevision"},      // all always present
//	 "with": {…},                   // the ResourceType's with: parameters, {} when absent
//	 "state": …,                    // what the previous reply put in "state", null at first
//	 "keepPlan": false,             // plan only: the gate of a policy asks; keep this plan
//	 "approvedPlan": ""}            // reconcile: the hash of the plan the gate let through
//
// and its environment adds TRUEUP_OPERATION, TRUEUP_KIND, TRUEUP_NAMESPACE, TRUEUP_NAME,
// TRUEUP_GENERATION, TRUEUP_REVISION, TRUEUP_FALLBACK_REVISION and (on Unix) TRUEUP_LOCK_FD
// to the environment above (config env keys may not start with TRUEUP_).
//
// revision is the Git commit the call is made at: for a reconcile, the one that last changed
// the resource's desired state; for a delete, the one the resource was last applied at (on
// retries after a failure, every other attempt the source's newest revision when a commit
// came after the removal), or the one that removed it when it was never applied.
// fallbackRevision, for a delete, is the source's newest revision when it differs from
// revision ("" otherwise): a command that reads the repository at revision and finds the
// commit gone (history rewritten) reads it there instead. It was added within protocol v1
// (an additive field: commands that do not know it ignore it).
//
// keepPlan and approvedPlan serve the gate of a policy: keepPlan is true on the
// plan the gate asks for before a reconcile, and approvedPlan, on the reconcile the gate
// then lets through, is that plan's hash (the reply's "hash", or the one trueup derives from
// the reply without it; "" when no plan was made). A delete's approvedPlan is always "": the
// kind does not plan deletes (no actions.DeletePlanner). A command that keeps
// plans saves what it needs to apply exactly the kept one, applies it on approvedPlan, and
// fails when it holds no plan of that hash (the next attempt plans again). Both were added
// within v1; a command that does not keep plans ignores them.
//
// When the call is traced (a tracing: block in the controller config, and the attempt
// sampled), TRACEPARENT holds the W3C trace context of the call's span, as OpenTelemetry's
// environment-variable convention names it (and TRACESTATE, when there is one): a command
// that starts spans of its own with it as their parent joins trueup's trace. It is absent
// otherwise; commands need not use it.
//
// File descriptors 0, 1 and 2 are the request, the reply and the log. On Unix, descriptor 3
// (TRUEUP_LOCK_FD) holds the resource's lock: an exclusive flock on a file of lockDir named
// after a digest of the resource's identity (namespace, kind, name), whatever the operation
// and whether the call carries a UID (a preview's plan does not). A call with a UID also
// takes uid-<UID>.lock, the name earlier releases used, for a command started before an
// upgrade that still holds it. Commands need not touch it; every process
// that inherits it keeps the lock held while it lives, so that a call for the same resource —
// from a restarted trueup, say — waits up to 3s for a previous run to end and then fails with
// "a previous run of this action for NAMESPACE/KIND/NAME is still running", retried with
// backoff: two runs for one resource never overlap. A command that closes descriptor 3, or
// starts programs that close inherited descriptors (Python's subprocess does), drops the lock
// for those processes; trueup's own copy still holds it until the call returns.
//
// The command prints at most one JSON object on stdout (logs go to stderr):
//
//	{"done": true, "outputs": {…}, "state": …, "requeueAfter": "30s", "message": "…",
//	 "conditions": [{"type", "status", "reason", "message"}], "inSync": true}
//
// Every field is optional and unknown fields are ignored, so that newer commands work with
// older controllers.
//   - done: absent means true, unless requeueAfter is set: a command that only asks to be
//     called again is not done. Empty stdout means done (and, for observe, in sync).
//   - state: kept by the controller and handed back on the next call. Absent keeps the
//     previous state; null clears it.
//   - requeueAfter: a Go duration; when not done, the next call comes after it.
//   - outputs: become status.outputs; numbers keep their exact digits.
//   - conditions: status is "True", "False" or "Unknown"; type is required.
//   - inSync: observe only; absent means true.
//   - drift: observe only, when not in sync: what drifted, at most 100 of
//     {"path": JSON pointer into the spec, "expected": …, "actual": …}; path is required.
//   - observed: observe only, when not in sync: the spec as found (a JSON object), for the
//     controller to compare when drift is absent.
//
// Stdout is limited to 4 MiB; only the last 4 KiB of stderr are kept.
//
// # Plan
//
// Pull-request previews ask an instance for a plan (actions.Planner). The operation "plan" is
// part of v1 and sent only to commands whose instance declares plan: true; for the others
// Plan answers actions.ErrNoPlan ("no plan" in the preview) without starting anything. The
// opt-in keeps v1 backward compatible and safe: a command written before plan existed may
// treat an operation it does not know as reconcile, and would then change the world for a
// pull request that was never merged. A command that declares plan gets the same stdin and
// environment as for reconcile, with operation "plan" (TRUEUP_OPERATION=plan), must change
// nothing, and prints
//
//	{"changes": true, "summary": "1 to add, 0 to change", "plan": "full text",
//	 "add": 1, "change": 0, "destroy": 0, "replace": 0, "hash": "sha256:9c1e…"}
//
// "changes" is required: a reply without it (empty stdout, a reconcile reply) is an error,
// never read as "no changes". summary and plan are optional strings, redacted like messages;
// the stdout limit bounds them. add, change, destroy and replace are optional counts
// (integers from 0 to 2147483647) that policies read as plan.add and so on; any of them
// makes the plan counted (the absent ones are 0), none leaves them 0 with the plan
// uncounted, and counts other than 0 with "changes": false are an error. hash is an optional
// string (at most 128 printable ASCII characters, no spaces) naming what the plan would do;
// an approval binds to it and a reconcile carries it back as approvedPlan. Every reader of
// the resource sees it as it is, so it must not contain a secret nor be computable from one;
// a hash containing a secret of the call or of the instance is refused. It must be the same
// for the same change, else approvals never match. Without it trueup derives one from the
// rest of the reply. An invalid value is an error naming the field (actions.PlanDetails). All five were
// added within v1. Exit status 64 (EX_USAGE, ExitNoPlan) says "I cannot plan
// this call" and gives actions.ErrNoPlan; 78 is terminal as for reconcile; any other non-zero
// status is a failed plan. A plan never delays another call of its resource: it takes the
// resource lock only when it is free (else it fails with "the resource is being reconciled:
// no plan now"), and a reconcile, delete or observe of the resource in the same process
// stops the plan in progress (actions.PlanGate, the host's or the instance's; its group is killed as on a
// timeout) and takes the lock after it. A reconcile on another host can still start beside a plan (the preview checks the
// resource's lease before it asks, not after): a plan must change nothing. Nothing of the
// reply reaches the resource's state.
//
// Exit status 0 means the reply is valid. Any other exit status is a failed attempt, retried
// with backoff, whose error reads "exit status N: <stderr tail>". Exit status 78 (EX_CONFIG
// in sysexits.h) is terminal: the command says it cannot succeed until the spec changes, so
// the resource is Stalled instead of retried.
//
// # Descendants
//
// On Linux the command is the init (PID 1) of a PID namespace of its own (inside a user
// namespace that maps trueup's uid and gid onto themselves when trueup is not root), and dies
// with trueup (parent-death signal). When it exits or dies, the kernel kills every process in
// its namespace, double-forked and setsid'd ones included: nothing a command started outlives
// the command, nor trueup, however trueup dies (kill -9, out of memory). A command therefore
// cannot leave a daemon behind. Inside, $$ and $! are the namespace's numbers (the command is
// 1); /proc is the host's, where /proc/self has the host's. In a user namespace, files of
// users other than trueup's show as owned by nobody, and set-user-ID programs owned by them
// (sudo) run without their privileges. Whether this works is probed once
// per process (proc.Mode); where it does not (no user namespaces for a non-root trueup, a
// seccomp filter), `trueup serve` says so once at start-up and commands run as below only,
// where descendants that left the process group may outlive trueup, and the resource lock
// keeps the next run from starting next to them.
//
// The command also leads its own process group. When the call times out or its context is
// cancelled, the whole group gets SIGTERM, then SIGKILL once the command has exited or 2s
// have passed, so that children the command started die with it (a command whose children
// need time to clean up traps SIGTERM and waits for them). As PID 1, a command that has no
// SIGTERM handler would not die of that SIGTERM: it is killed at once instead, as it would
// have died. Processes still in the group when the command exits are killed as well. A call
// waits at most 2s for a leftover process to close stdout and stderr.
package execaction
