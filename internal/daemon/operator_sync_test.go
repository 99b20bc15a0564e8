package daemon

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestOperatorSyncReachesTheHolder: a sync asked through the API (store.RequestSync, on
// whichever replica got the request) is run by the holder of the source's lease, through the
// same NOTIFY a webhook uses; a suspended source holds the new head back, and its resume
// makes the holder apply it without another request.
func TestOperatorSyncReachesTheHolder(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, holder, follower := twoReplicas(ctx, t)

	rev2 := strings.Repeat("2", 40)
	holder.src.head.Store(rev2)
	follower.src.head.Store(rev2)
	if err := st.RequestSync(ctx, "infra", "token:ci-bot"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the head applied after the sync request", func() bool {
		src, err := st.GetSource(ctx, "infra")
		return err == nil && src.Revision == rev2
	})
	if n := follower.src.heads.Load(); n != 0 {
		t.Errorf("the replica without the lease synced %d times", n)
	}

	if err := st.SetSourceSuspended(ctx, "infra", true, "token:ci-bot", "freeze"); err != nil {
		t.Fatal(err)
	}
	rev3 := strings.Repeat("3", 40)
	holder.src.head.Store(rev3)
	follower.src.head.Store(rev3)
	if err := st.RequestSync(ctx, "infra", "token:ci-bot"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the head held back while suspended", func() bool {
		src, err := st.GetSource(ctx, "infra")
		return err == nil && src.PendingRevision == rev3 && src.Revision == rev2
	})
	if err := st.SetSourceSuspended(ctx, "infra", false, "token:ci-bot", ""); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the held head applied on resume", func() bool {
		src, err := st.GetSource(ctx, "infra")
		return err == nil && src.Revision == rev3 && src.PendingRevision == ""
	})
}
