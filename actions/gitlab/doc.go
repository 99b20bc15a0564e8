// Package gitlab owns the "gitlab" action kind: it drives resources through GitLab CI
// pipelines, started with a pipeline trigger token and followed with the REST API (v4),
// using only net/http.
//
// # Controller config
//
//	actions:
//	  - name: ci
//	    type: gitlab
//	    config:
//	      baseURL: https://gitlab.example.com/   # or .../api/v4; a test server in tests
//	      project: infra/db                      # a path, or a numeric id: 42
//	      triggerToken: ${GL_TRIGGER}            # starts pipelines
//	      token: ${GL_TOKEN}                     # reads, lists and cancels pipelines
//	      ref: main                              # default main
//	      pollInterval: 15s                      # default 15s
//	      timeout: 30s                           # per HTTP call, default 30s
//	      allowedRefs: [main, "release/*"]       # optional: refs a type's with.ref may choose
//	      allowedVariables: [TIER, "DEPLOY_*"]   # optional: names with.variables may set
//
// Both tokens are required: a trigger token can start pipelines but cannot read or cancel
// them. token is a personal, project or group access token with the api scope (read_api is
// not enough to cancel); its user must be able to read pipeline variables, which adoption
// (below) depends on. The trigger's pipelines carry variables, so the project must let the
// trigger's owner set pipeline variables (Settings > CI/CD > Variables). Unknown fields are
// errors.
//
// # ResourceType
//
//	spec:
//	  action:
//	    name: ci
//	    with:
//	      ref: release                 # optional, overrides the config's ref
//	      variables: {TIER: gold}      # optional static variables (strings, numbers, booleans)
//	      outputsJob: export           # optional, see Outputs
//	      planJob: plan                # optional, see Plan
//
// Variable names follow GitLab's rule (letters, digits, _) and may not start with TRUEUP_.
// Unknown fields are errors, reported when the commit is ingested.
//
// Types live in Git, the instance's tokens do not: allowedRefs and allowedVariables, when
// set, list the refs a type's with.ref may name and the variable names its with.variables
// may set, each exact or a path.Match glob whose * stops at a slash; an empty list allows
// none. Anything else rejects the commit at ingest and, for a type stored before the lists
// were set, stalls the resource (a terminal error) on every call without triggering:
// `with.ref: "evil" is not in the action's allowedRefs [main release/*]`. The config's own
// ref and the TRUEUP_ variables are not checked. Absent lists restrict nothing.
//
// # The pipeline's side
//
// Every pipeline is started on ref with the static variables and:
//
//	TRUEUP_OPERATION   reconcile | delete | plan
//	TRUEUP_KIND        TRUEUP_NAMESPACE  TRUEUP_NAME
//	TRUEUP_GENERATION  the resource's generation
//	TRUEUP_REVISION    the Git commit of the call: for reconcile and plan, the one that last
//	                   changed the desired state; for delete, the one the resource was last
//	                   applied at (on retries after a failure, every other attempt the
//	                   source's newest revision when a commit came after the removal), or the
//	                   removing one when it was never applied
//	TRUEUP_FALLBACK_REVISION
//	                   delete only, when it differs from TRUEUP_REVISION: the source's newest
//	                   revision, to check out when TRUEUP_REVISION is gone (history rewritten)
//	TRUEUP_SPEC        the spec, compact JSON
//	TRUEUP_ID          a correlation id, unique per trigger (trueup uses it; jobs may ignore it)
//
// A .gitlab-ci.yml that handles both operations and publishes outputs:
//
//	workflow:
//	  rules:
//	    - if: $CI_PIPELINE_SOURCE == "trigger"
//	apply:
//	  stage: deploy
//	  rules: [{if: $TRUEUP_OPERATION == "reconcile"}]
//	  script:
//	    - echo "$TRUEUP_SPEC" > spec.json
//	    - ./provision.sh "$TRUEUP_NAMESPACE" "$TRUEUP_NAME" spec.json
//	destroy:
//	  stage: deploy
//	  rules: [{if: $TRUEUP_OPERATION == "delete"}]
//	  script: ./destroy.sh "$TRUEUP_NAMESPACE" "$TRUEUP_NAME"
//	export:
//	  stage: .post
//	  rules: [{if: $TRUEUP_OPERATION == "reconcile"}]
//	  script: ./describe.sh "$TRUEUP_NAME" > trueup-outputs.json   # {"endpoint": "…", "port": 5432}
//	  artifacts: {paths: [trueup-outputs.json]}
//
// # Outputs
//
// A succeeded reconcile pipeline gives status.outputs
//
//	{"pipelineID": 1234, "webURL": "https://gitlab.example.com/infra/db/-/pipelines/1234",
//	 "jobs": [{"name": "apply", "stage": "deploy", "status": "success"}, …]}
//
// jobs in the order they were created, retried jobs excepted. When with.outputsJob names a
// job, the JSON object in that job's artifact trueup-outputs.json is merged in (its keys
// pipelineID, webURL and jobs are overridden). The artifact is read from that very job
// (GET /projects/:id/jobs/:job_id/artifacts/trueup-outputs.json), not from the latest
// successful job of the ref, which could belong to another resource's pipeline. A missing
// job or artifact fails the attempt without starting a new pipeline.
//
// # Calls and state
//
// A call never waits for a pipeline: it triggers it, returns Done=false with RequeueAfter =
// pollInterval, and keeps {pipelineID, webURL, correlation, generation} in the state; the
// next call reads the pipeline. Statuses created, waiting_for_resource, preparing,
// waiting_for_callback, pending, running, scheduled, manual and canceling are in progress
// (as is any status GitLab adds later); success is Done; failed is an error naming the
// failed jobs (allow_failure excepted) and the pipeline URL; canceled and skipped are errors
// too. An error is retried by the controller with backoff, and the retry triggers a new
// pipeline. Delete triggers a pipeline with TRUEUP_OPERATION=delete and waits for it the
// same way. Calling Reconcile again after success (restart, resync) reads the pipeline again
// and starts nothing.
//
// A new generation (or a Delete) while a pipeline of the previous one runs cancels that
// pipeline and waits until GitLab reports it finished before triggering the next one: GitLab
// answers a cancel with 200 whatever happens, jobs may run after_script for a while, and two
// pipelines changing the same infrastructure at once is what this controller prevents. A
// superseded pipeline blocked on a manual job ("manual") runs nothing and a cancel does not
// end it: after one cancel request it is not waited for.
//
// # Exactly once across crashes
//
// Before triggering, the intent (phase "dispatching", a new correlation id, the time) is
// checkpointed through actions.Request.Checkpoint; when that fails (the lease was lost)
// nothing is triggered. A call that finds a dispatching state without a pipeline id
// (its replica died between trigger and record, or the trigger call failed in a way that
// does not say whether GitLab created the pipeline: a connection error, a timeout, a 5xx)
// adopts: it lists the project's pipelines on the ref with source=trigger updated
// since shortly before the intent, following X-Next-Page, and reads their variables until
// one has TRUEUP_ID equal to the correlation id. If none is found within 2 minutes of the
// intent, a new pipeline is triggered with a new correlation id. When GitLab answers the
// trigger with an error (4xx), no pipeline exists and the intent is dropped at once.
//
// # Rate limits
//
// A 429 does not fail the resource: the call returns Done=false with RequeueAfter at the
// reset (Retry-After, else RateLimit-Reset, else a minute, plus a little jitter) and the
// condition {type: RateLimited, status: "True", reason: GitLabRateLimit}, set to "False"
// (reason RateLimitReset) by the next call that gets through. The reset is kept per token
// and host (internal/forge/ratelimit), shared by every instance, commit status and preview
// note of the token: until then every call of every resource returns at once without a
// request, and a RateLimit-Remaining of 0 pauses calls until RateLimit-Reset before a 429
// comes.
// (*Action).RateLimitRemaining reports the last RateLimit-Remaining seen (-1 unknown).
//
// # Plan (pull-request previews)
//
// With planJob, Plan triggers a pipeline with TRUEUP_OPERATION=plan and the pull request's
// spec, and waits for it within the call, reading it every pollInterval until the preview's
// plan timeout; a pipeline still going then is cancelled. The plan is the planJob's
// artifact trueup-outputs.json (read as for outputsJob):
//
//	{"changes": true, "summary": "1 to add, 0 to change, 0 to destroy", "plan": "full text"}
//
// changes is required; summary and plan are strings. A failed pipeline, a missing job or
// artifact, or a malformed file is the plan's error, shown in the preview. A plan pipeline
// must change nothing: give its jobs rules on $TRUEUP_OPERATION == "plan", and keep the
// apply jobs' rules to "reconcile". It neither reads nor writes the resource's State (no
// checkpoint), and its own TRUEUP_ID keeps a reconcile from adopting it. Without planJob the
// type has no plan ("no plan" in the preview): a pipeline written before plans existed may
// run its apply jobs for any operation.
//
//	plan:
//	  stage: deploy
//	  rules: [{if: $TRUEUP_OPERATION == "plan"}]
//	  script: ./plan.sh "$TRUEUP_NAME" > trueup-outputs.json   # {"changes": …, "summary": …, "plan": …}
//	  artifacts: {paths: [trueup-outputs.json]}
//
// # Drift
//
// Observe reports in sync without calling GitLab: a pipeline has no cheap drift check, so
// pipelines run when the spec changes (or on retry), never on resync.
//
// # Secrets
//
// The trigger token travels in the form body of the trigger call, never in a URL; the API
// token in the PRIVATE-TOKEN header. Neither appears in errors, logs, state, outputs or
// messages: error answers quoted in errors are bounded and scrubbed of both.
package gitlab
