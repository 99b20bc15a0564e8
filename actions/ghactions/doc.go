// Package ghactions owns the "github-actions" action kind: it drives a resource by
// dispatching a GitHub Actions workflow (workflow_dispatch) with the resource as inputs,
// follows the run without holding a worker, and reports the run's jobs, artifacts and
// published outputs. It talks to api.github.com or GitHub Enterprise Server through
// go-github.
//
// # Controller config
//
// An instance in the controller config (docs/reference/config.md), authenticated with a token:
//
//	actions:
//	  - name: gha-infra
//	    type: github-actions
//	    config:
//	      token: "${GITHUB_TOKEN}"        # fine-grained PAT: Actions read and write on the repository
//	      owner: acme
//	      repo: infra
//	      ref: main                       # default ref to dispatch on; default "main"
//	      workflow: provision.yml         # optional default for with.workflow
//	      baseURL: https://api.github.com/ # GHES: https://HOST/api/v3/
//	      pollInterval: 15s               # delay between status checks of a run; default 15s
//	      timeout: 30s                    # per HTTP call; default 30s
//	      checkTimeout: 10m               # how long Observe waits for a check run; default 10m
//	      allowedRefs: [main, "release/*"] # optional: the refs a type's with.ref may choose
//
// or as a GitHub App installation (the App needs the Actions read and write permission):
//
//	config:
//	  app:
//	    appID: 123456
//	    installationID: 7654321
//	    privateKeyFile: secrets/trueup-app.pem   # relative to the config file's folder
//	  owner: acme
//	  repo: infra
//
// The plugin signs the App JWT (RS256) itself, exchanges it for an installation token,
// caches the token and renews it 5 minutes before it expires. Exactly one of token and app
// is required; unknown fields are errors.
//
// # ResourceType parameters
//
//	apiVersion: trueup.dev/v1
//	kind: ResourceType
//	metadata:
//	  name: DatabaseCluster
//	spec:
//	  group: example.com
//	  versions: [...]
//	  action:
//	    name: gha-infra
//	    with:
//	      workflow: database.yml          # file name in .github/workflows, or numeric id; required
//	                                      # unless the instance config names a default
//	      ref: release/2026-05            # optional; overrides the config's ref
//	      inputs: {environment: prod}     # optional static inputs, sent with every dispatch
//	      deleteWorkflow: database-delete.yml  # optional; else workflow with operation=delete
//	      checkWorkflow: database-check.yml    # optional drift check (Observe)
//	      planWorkflow: database.yml           # optional plan for pull-request previews (Plan)
//
// `with:` is checked when the commit is ingested: unknown fields, workflow names that are not
// a file name or an id, static inputs using a reserved name, and more static inputs than
// GitHub's limit leaves room for reject the commit.
//
// Types live in Git, the instance's credentials do not: allowedRefs, when set, lists the refs
// a type's with.ref may name, each exact or a path.Match glob whose * stops at a slash
// (release/* allows release/1.2, not release/1.2/x); an empty list allows no with.ref, only
// the config's ref. Anything else rejects the commit at ingest and, for a type stored
// before the list was set, stalls the resource (a terminal error) on every call without
// dispatching: `with.ref: "evil" is not in the action's allowedRefs [main release/*]`. The
// config's own ref is not checked. Without allowedRefs, with.ref is not restricted.
//
// # The workflow side
//
// Every dispatch sends these inputs, which the workflow must declare, plus the static
// inputs of `with:`:
//
//	name, namespace    the resource's identity
//	generation         its generation (a decimal string)
//	revision           the Git commit of the call (below)
//	spec               its spec as compact JSON
//	operation          reconcile | delete | check | plan
//	trueup_id          a unique id of this dispatch
//
// revision is, for reconcile and plan, the commit that last changed the desired state; for
// delete, the one the resource was last applied at (on retries after a failure, every other
// attempt the source's newest revision when a commit came after the removal), or the
// removing one when it was never applied. No fallback revision is sent (GitHub refuses a
// dispatch with an input the workflow does not declare, so a new input would break every
// workflow): a delete workflow that checks out revision and finds it gone (history
// rewritten) may check out its branch instead.
//
// The run must carry trueup_id in its name (run-name). The plugin finds a run by that id
// when GitHub does not name the run in its answer to the dispatch (GitHub Enterprise Server
// before return_run_details, or after a controller crashed between dispatching and
// recording); it never takes "the newest run", which may be someone else's. A dispatch
// whose run cannot be found 2 minutes later fails with an error saying so.
//
// A complete workflow, .github/workflows/database.yml:
//
//	name: Database
//	run-name: ${{ inputs.operation }} ${{ inputs.namespace }}/${{ inputs.name }} (${{ inputs.trueup_id }})
//	on:
//	  workflow_dispatch:
//	    inputs:
//	      name:        {type: string, required: true}
//	      namespace:   {type: string, required: true}
//	      generation:  {type: string, required: true}
//	      revision:    {type: string, required: false}
//	      spec:        {type: string, required: true}
//	      operation:   {type: string, required: true}
//	      trueup_id:   {type: string, required: true}
//	      environment: {type: string, required: false}   # a static input from with.inputs
//	concurrency:
//	  # Plans in a group of their own: a plan queued behind a reconcile must not replace the
//	  # reconcile's pending run (GitHub keeps one pending run per group); reconcile and delete
//	  # share one, so they never run at once.
//	  group: database-${{ inputs.namespace }}-${{ inputs.name }}-${{ inputs.operation == 'plan' && 'plan' || 'apply' }}
//	jobs:
//	  apply:
//	    runs-on: ubuntu-latest
//	    steps:
//	      - uses: actions/checkout@v4
//	      - name: Apply
//	        env:                             # pass inputs through env, never ${{ }} inside run:
//	          SPEC: ${{ inputs.spec }}
//	          OPERATION: ${{ inputs.operation }}
//	          NAME: ${{ inputs.name }}
//	        run: ./scripts/database.sh "$OPERATION" "$NAME" <<< "$SPEC"
//	      - name: Publish outputs
//	        run: |
//	          jq -n --arg endpoint "$(cat endpoint.txt)" '{endpoint: $endpoint, port: 5432}' > outputs.json
//	      - uses: actions/upload-artifact@v4
//	        with:
//	          name: trueup-outputs
//	          path: outputs.json
//
// The simplest run-name is ${{ inputs.trueup_id }}; any name containing it works. With
// operation=check the workflow compares the real system with the spec and fails (exits
// non-zero) when they differ.
//
// # Reconcile
//
// Reconcile never waits for a run. It dispatches the workflow and answers Done=false with
// RequeueAfter=pollInterval and a State holding the run id, run URL, trueup_id, generation
// and the run's ETag; later calls fetch the run with If-None-Match, so that a poll of an
// unchanged run is a 304, which costs no rate-limit quota. When the run completes:
//   - success (also neutral and skipped): Done, with the outputs below;
//   - failure, cancelled, timed_out, action_required, startup_failure: an error (retried
//     with backoff) naming the run URL and the failing jobs; the retry dispatches anew.
//
// When GitHub names the run in its answer to the dispatch, the run is looked at right away,
// so that a run that cannot start is reported at once. A Reconcile for a generation that already succeeded answers the stored outputs
// without calling GitHub.
//
// Exactly once across crashes: before dispatching, the plugin commits its intent (trueup_id,
// workflow, time) through Request.Checkpoint and does not dispatch if that fails. A call that
// finds an intent without a run id looks for the run by trueup_id and adopts it; only when no
// run has appeared 2 minutes after the intent does it dispatch again, with a new trueup_id.
// A dispatch refused by GitHub (4xx) withdraws its intent.
//
// A new generation while a run is in flight cancels that run (POST …/cancel; a run that
// completed meanwhile is fine) and dispatches anew; the message and the outputs carry
// "supersedes": the old run id. A superseded dispatch whose run is not listed yet cannot be
// cancelled; use the workflow's concurrency group to serialise runs per resource.
//
// Limits: GitHub accepts at most 25 inputs and 65,535 characters of inputs (counted here
// as the JSON of all inputs); a resource whose spec exceeds that is Stalled (terminal error)
// without dispatching.
//
// # Outputs
//
//	runURL     the run's web URL
//	runID      the run id
//	jobs       [{name, conclusion, startedAt, completedAt}] of the latest attempt
//	artifacts  [{name, sizeInBytes}]
//	supersedes the run of the older generation it replaced, when there was one
//
// When the run uploaded an artifact named trueup-outputs, its single JSON file (or
// outputs.json among several) must hold a JSON object; its keys are merged into the outputs
// and win over the ones above. Zip and file are limited to 1 MiB each; a malformed or
// oversized file is a terminal error. The artifact is downloaded from the signed URL the API
// redirects to, without sending credentials there.
//
// # Delete
//
// Delete dispatches deleteWorkflow, or workflow with operation=delete, and follows it the
// same way (a reconcile run still in flight is cancelled first). A resource for which
// nothing was ever dispatched is deleted at once.
//
// # Observe (drift)
//
// Without checkWorkflow, Observe reports in sync. With it, Observe dispatches the check
// (operation=check) and waits for the run within the call, polling every pollInterval for
// at most checkTimeout: Observation has no State to keep a run handle in, and a check
// collected by a later resync would report drift one resync interval late, perhaps on
// another replica. Success is in sync; a failure conclusion is drift (InSync=false, with the
// run URL and the failing jobs), and the Reconcile that follows runs the workflow again even
// though the generation already succeeded; other conclusions are errors. A check that
// exceeds checkTimeout is cancelled and reported as an error. While a run is in flight, or
// while rate limited, the check is skipped (in sync, with a message).
//
// # Plan (pull-request previews)
//
// With planWorkflow (which may be the same file as workflow), Plan dispatches it with
// operation=plan and the pull request's spec, and waits for the run within the call,
// polling every pollInterval until the preview's plan timeout; a run still going then is
// cancelled. The plan is the run's trueup-outputs artifact (read as for outputs):
//
//	{"changes": true, "summary": "1 to add, 0 to change, 0 to destroy", "plan": "full text"}
//
// changes is required; summary and plan are strings. A failed run, a run without the
// artifact, or a malformed file is the plan's error, shown in the preview. A plan run must
// change nothing. It neither reads nor writes the resource's State (no checkpoint): it has
// a trueup_id of its own, so that a reconcile never adopts it. Without planWorkflow the
// type has no plan ("no plan" in the preview): a workflow written before plans existed would
// take operation=plan for a reconcile. A workflow serving both should give plans a concurrency
// group of their own (see the example above), or a plan queued behind a reconcile replaces
// the reconcile's pending run.
//
// # Rate limits
//
// A primary limit (403 with X-RateLimit-Remaining: 0), a 429 (Retry-After or
// X-RateLimit-Reset) or a secondary limit (403 with Retry-After) does not fail the
// resource: the call answers Done=false, RequeueAfter until the reset (plus up to 2s of
// jitter), the State as it stands, and the condition
//
//	{type: RateLimited, status: "True", reason: GitHubRateLimit, message: "… resets at …"}
//
// which every later call that reaches GitHub sets back to status "False". The reset time
// is kept per credential and host (internal/forge/ratelimit), shared by every instance,
// commit status and preview comment of the token or App installation, so that every other
// resource waits for it too instead of asking GitHub; an answer with X-RateLimit-Remaining:
// 0 pauses calls until X-RateLimit-Reset the same way, and go-github's own refusal to call
// before a known reset maps the same way. RateLimitRemaining exposes the last
// X-RateLimit-Remaining seen.
//
// # Secrets
//
// The token, installation tokens and the App's private key never appear in errors, logs,
// outputs, State, conditions or messages: everything the plugin returns or logs is scrubbed
// of them, including text echoed by a server or published by a workflow. The key file's
// content is never quoted, and base URLs may not carry credentials.
package ghactions
