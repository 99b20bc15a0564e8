// Package httpcall owns the "http" action kind: a generic HTTP provisioner client. Each call
// sends the resource as JSON to a trusted URL from the controller config and reads the
// outcome from the answer, or follows an asynchronous job at the URL the answer names.
//
// # Controller config
//
//	actions:
//	  - name: hook
//	    type: http
//	    config:
//	      url: https://provisioner.internal/api/resources     # required
//	      method: POST                                        # POST (default), PUT or PATCH
//	      headers: {Authorization: "Bearer ${PROV_TOKEN}"}    # sent on every request
//	      signingSecret: ${PROV_SIGNING_SECRET}               # optional: sign requests
//	      timeout: 30s                                        # per HTTP request, default 30s
//	      pollInterval: 10s                                   # default 10s
//	      retry: {attempts: 3, initial: 500ms}                # tries per call, first backoff
//	      plan: true                                          # the provisioner answers "plan" (default false)
//
// Header values and the signing secret are secrets: they never appear in errors, logs,
// state or outputs (values shorter than 6 bytes excepted: they would match ordinary words),
// and answers quoted in errors are scrubbed of them. Content-Type, Idempotency-Key and
// X-Trueup-* are set by the plugin and may not be configured. Unknown fields are errors.
//
// # ResourceType
//
//	spec:
//	  action:
//	    name: hook
//	    with:
//	      path: /databases        # optional, appended to url (plain segments, no .. ? # %)
//	      body: {plan: gold}      # optional static fields, sent as the request's "with"
//
// # The request
//
// Reconcile sends method (POST) to url+path; Delete sends DELETE to the same URL. Both carry
//
//	{"operation": "reconcile",            // or "delete"
//	 "resource": {"apiVersion", "kind", "namespace", "name", "uid", "generation", "spec",
//	              "labels", "annotations", "revision",    // always all present
//	              "fallbackRevision"},                    // a delete's, when set
//	 "with": {"plan": "gold"}}            // with.body, {} when absent
//
// revision is the Git commit of the call: for a reconcile, the one that last changed the
// desired state; for a delete, the one the resource was last applied at (on retries after a
// failure, every other attempt the source's newest revision when a commit came after the
// removal), or the removing one when it was never applied. fallbackRevision, on a delete
// when it differs, is the source's newest revision: where to read the repository when the
// commit of revision is gone (history rewritten).
//
// with the configured headers and
//
//	Content-Type: application/json
//	X-Trueup-Operation: reconcile | delete
//	Idempotency-Key: <uid>-<generation>-<operation>
//	X-Trueup-Signature-256: sha256=<hex HMAC-SHA256 of the body, keyed by signingSecret>
//
// The Idempotency-Key names the desired state: it is the same on every try and retry of
// the request (deduplicate on it), new for a new generation or operation, and after the
// provisioner reported a job failed it gets a suffix (-1, -2, …) so that the retry is a new
// request instead of a replay of the failure. A provisioner verifies the signature over the
// raw body bytes, comparing in constant time; in Go:
//
//	mac := hmac.New(sha256.New, secret)
//	mac.Write(body)
//	ok := hmac.Equal([]byte(r.Header.Get("X-Trueup-Signature-256")),
//		[]byte("sha256="+hex.EncodeToString(mac.Sum(nil))))
//
// # Answers
//
//   - 2xx with an empty or non-JSON body: done.
//   - 2xx with a JSON object: done; its "outputs" object becomes status.outputs, or, without
//     "outputs", the whole object does (less "status" and "message"). "message" becomes
//     status.message. A "status" of "failed" is a failure (below); "pending" or "running"
//     means not done yet: the same request, with the same Idempotency-Key, is sent again
//     after Retry-After or pollInterval (for provisioners without a status URL).
//   - 202 with Location: accepted. The Location, resolved against the request URL, is kept
//     in the state and the next calls GET it (same headers; the signature is that of an
//     empty body) after Retry-After or pollInterval, until it answers
//     {"status": "done"|"succeeded", "outputs": {…}} (done; an answer without status, such
//     as the created resource after a same-origin redirect, is done too),
//     {"status": "failed", "message": "…"} (a failure) or {"status": "pending"|"running"}.
//     A 404 or 410 from the status URL means the job was lost: the request is sent again.
//   - Delete: 404 and 410 mean already gone, hence done.
//   - 4xx other than 408 and 429: a terminal error carrying the status and a bounded excerpt
//     of the body; the resource is Stalled until its spec changes.
//   - 5xx, 408, 429 and connection errors: retried within the call with exponential backoff
//     (initial, doubled, capped at 10s, jittered) up to retry.attempts tries, then an error
//     that the controller retries with its own backoff. A Retry-After on 429 or 503 is
//     honoured: waited for within the call when at most 10s, else the call returns
//     Done=false with RequeueAfter = Retry-After, without an error.
//
// A failure reported by the provisioner is an error (retried by the controller, under a new
// Idempotency-Key); the provisioner's message is part of it. A new generation while a job
// is followed leaves that job (HTTP has no general cancel): the new request goes out and the
// provisioner is expected to supersede the old job.
//
// # Plan
//
// Pull-request previews ask for a plan: what a reconcile would do, without doing it. Only an
// instance with `plan: true` is asked (a provisioner that predates plan and does not read
// "operation" would apply the pull request's spec); the others have no plan. The request is
// the reconcile's, with method (POST), "operation": "plan", X-Trueup-Operation: plan, and an
// Idempotency-Key of <uid>-plan-<hash of the body>, the same for the same spec. Answers:
//
//   - 2xx {"changes": true, "summary": "1 to add, 0 to change", "plan": "full text"}: the
//     plan ("status" absent, "done" or "succeeded"); "changes" is required and boolean. The
//     answer may add counts, "add", "change", "destroy" and "replace" (integers from 0 to
//     2147483647, read by policies as plan.add and so on; any of them makes the plan
//     counted, the absent ones being 0; counts other than 0 with "changes": false are an
//     error), and "hash" (at most 128 printable ASCII characters, no spaces), which names
//     what the plan would do: an approval binds to it. An invalid value is an error naming
//     the field (actions.PlanDetails).
//   - 2xx {"status": "pending"|"running"}: the same request is sent again after Retry-After
//     or pollInterval; 202 with Location: the Location is read until it answers as above.
//     Both are bounded by the preview's plan timeout: a plan keeps no state between calls.
//   - 404, 405 and 501 to the request: this provisioner (or path) does not plan; the
//     preview says "no plan". 501 is not retried.
//   - {"status": "failed", "message": "…"}, another 4xx, or 5xx after the retries: the
//     preview shows the plan's error.
//
// A provisioner must not change anything when asked for a plan.
//
// The hash is shown as it is to every reader of the resource, never redacted: it must not
// contain a secret nor be computable from one (a digest of content holding a secret lets a
// reader test guesses offline). A hash containing a secret of the call or of the instance
// (what summary and plan are scrubbed of) fails the plan with `"hash" holds a secret of the
// call`. It must be deterministic, the same for the same change, else an approval never
// matches a later attempt's plan and each attempt asks anew; without "hash" the host derives
// one from the rest of the answer, which must then be deterministic too.
//
// # Drift
//
// The kind does not implement actions.Observer: on resync the controller calls Reconcile,
// which sends the request again with the same Idempotency-Key. A provisioner that answers
// "done" at once for a state it already has makes resyncs cheap and corrects drift.
//
// # Safety
//
// A Location, and any redirect (followed for GET only), must stay on the origin (scheme and
// host) of the configured url, so that the configured headers never reach another host; a
// Location elsewhere is a terminal error. URLs in errors and logs lose their query and
// credentials.
package httpcall
