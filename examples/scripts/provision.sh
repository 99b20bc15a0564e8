#!/usr/bin/env bash
# An exec action (protocol trueup.dev/exec/v1) that "provisions" a resource by rendering its
# request into a file under $DEMO_DIR, so you can watch trueup work on your own machine.
# trueup sends one JSON document on stdin and sets TRUEUP_* variables; the script answers with
# one JSON document on stdout. A non-zero exit is a failed attempt whose stderr becomes the
# resource's message.
set -euo pipefail

demo_dir="${DEMO_DIR:-.trueup/demo}"
file="$demo_dir/$TRUEUP_NAMESPACE/$TRUEUP_KIND/$TRUEUP_NAME.json"
request="$(cat)"

case "$TRUEUP_OPERATION" in
  reconcile)
    if [[ "$TRUEUP_NAME" == broken-on-purpose ]]; then
      # The demo's failing resource: exit 78 means "cannot succeed until the spec changes", so
      # trueup marks it Failed (Stalled) with this message instead of retrying it.
      echo "$TRUEUP_KIND/$TRUEUP_NAMESPACE/$TRUEUP_NAME fails on purpose: the demo script refuses every resource named broken-on-purpose" >&2
      exit 78
    fi
    mkdir -p "$(dirname "$file")"
    printf '%s\n' "$request" > "$file.tmp" && mv "$file.tmp" "$file"
    extra=""
    case "$TRUEUP_KIND" in
      DatabaseCluster) endpoint="$TRUEUP_NAME.$TRUEUP_NAMESPACE.db.example.internal:5432" ;;
      Bucket)          endpoint="s3://$TRUEUP_NAMESPACE-$TRUEUP_NAME" ;;
      Network)         endpoint="$TRUEUP_NAME.$TRUEUP_NAMESPACE.net.example.internal"
                       extra=", \"subnet_id\": \"subnet-$TRUEUP_NAMESPACE-$TRUEUP_NAME\"" ;;
      *)               endpoint="$TRUEUP_NAME.$TRUEUP_NAMESPACE.example.internal" ;;
    esac
    # Outputs are what dependents read: ${{ Network/core.outputs.subnet_id }} in a spec.
    printf '{"done": true, "outputs": {"endpoint": "%s", "file": "%s", "generation": %s%s}, "message": "rendered to %s"}\n' \
      "$endpoint" "$file" "$TRUEUP_GENERATION" "$extra" "$file"
    ;;
  delete)
    rm -f "$file"
    printf '{"done": true, "message": "removed %s"}\n' "$file"
    ;;
  observe)
    # Drift: somebody deleted the rendered file by hand.
    if [[ -f "$file" ]]; then echo '{"inSync": true}'; else echo '{"inSync": false, "message": "'"$file"' is missing"}'; fi
    ;;
  *)
    echo "unknown operation $TRUEUP_OPERATION" >&2
    exit 2
    ;;
esac
