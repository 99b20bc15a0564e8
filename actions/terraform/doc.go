// Package terraform owns the "terraform" action kind: it runs Terraform or OpenTofu on a root
// module for each resource, with the resource's spec as the module's variables and its state
// in trueup's own PostgreSQL (DESIGN §6).
//
// # Config
//
//	{"module": "modules/database", "binary": "tofu", "timeout": "30m",
//	 "env": {"AWS_REGION": "eu-west-1"}, "workDir": "/var/lib/trueup/terraform",
//	 "backend": {"type": "s3", "config": {"bucket": "tf-state", "key": "db", "region": "eu-west-1"}}}
//
// module is required: a folder relative to the controller config's folder, or absolute; or
// {"source": "infra", "path": "modules/database"}, a folder of the infra source's repository
// read (actions.Env.ReadTree) at the revision each resource came from, for the resources of
// that source only, so that module changes flow through Git. A delete reads it at the
// revision the resource was last applied at (Request.Resource.Revision for a delete), so a
// commit that removes a manifest and breaks its module still destroys the resource; when
// that commit is gone from the repository (sources.ErrRevisionNotFound) it reads it at
// Resource.FallbackRevision, the source's newest revision. Such an instance plans pull
// requests (whose module is unreviewed code) only with "pullRequestModules": true, and pull
// requests from forks only when the source also sets preview.forkPlans (RunsPullRequestCode).
// binary defaults to terraform, then tofu, looked up in PATH when a call needs it. Each run
// gets the minimal environment of exec commands (PATH, HOME, LANG, TMPDIR) plus env; values
// of secret-named env variables are redacted like exec's. backend replaces the default:
// Terraform's pg backend in the controller's database (actions.Env.DatabaseURL, passed as
// PG_CONN_STR in the environment, never on a command line), schema trueup_tf_<instance>.
// Either way each resource has a workspace of its own, <namespace>.<kind>.<name>.
//
// # Calls
//
// Each resource has a working copy under workDir (created 0700; one that is not trueup's or
// that others can write to is refused): the module's files, copied with a backend override
// file, and its own TF_DATA_DIR. init runs again only when the module's content, the backend
// or the binary (its path or version) changed. The spec is written as a JSON var file (0600,
// removed when the call ends); the spec's variables that hold a call's secret, an encrypted
// field's marker or a secretRef are marked sensitive by a second override file, so that the
// state and plans redact them. Reconcile = plan -out + apply of that saved plan (nothing
// applied when the plan is empty); Delete = destroy + workspace delete + removal of the
// working copy; Observe = plan -detailed-exitcode (exit 2 is drift); Plan = plan -lock=false,
// for previews, whose text names the changes without any value. Plan creates no workspace: a
// resource never applied is answered as new without running Terraform. Plan and PlanDelete
// (plan -destroy) count the changes and hash them from show -json of the saved plan. The
// gate's plan (Request.KeepPlan) runs as a reconcile does and keeps its file in the working
// copy, named by its hash; a Reconcile or Delete with Request.ApprovedPlan applies that file
// and no other, and fails (to be planned again) when it is gone, reads as another hash, or
// Terraform finds it stale. Outputs come from
// output -json, sensitive ones as "***". Runs of one resource never overlap in a process (a
// lock per workspace) nor across processes (the backend's state lock, waited for 60s); a
// plan is refused while its workspace's lock is held, and stopped when another call of its
// resource comes (actions.PlanGate) or, during its init, when a call of any resource wants
// the instance's init lock. A timeout or Close interrupts Terraform
// with SIGINT, then kills its process group after 20s.
//
// Runs are contained as exec commands are (actions/proc): Terraform leads a process group of
// its own, is killed with trueup (parent-death signal), and where the machine allows it is the
// init of a PID namespace of its own, so that its providers and provisioners, and anything
// they start in the background, end with the run. Consequences an operator should know: if
// trueup is killed (SIGKILL, out of memory) during an apply, Terraform is killed too, so what
// it created since its last state snapshot is missing from the state (the next reconcile's
// plan shows it, or the provider's import is needed); the pg backend's lock is a session lock
// and goes with the connection, but a remote backend's lock (s3, gcs, azurerm) may stay held
// until released with terraform force-unlock. When trueup does not run as root the namespace
// sits in a user namespace that maps only trueup's user: files of other users appear as
// nobody's, and setuid programs (sudo) in local-exec provisioners do not gain privileges.
package terraform
