package actions

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestSleepEndsWithContext(t *testing.T) {
	t.Parallel()
	if err := Sleep(t.Context(), time.Millisecond); err != nil {
		t.Fatalf("Sleep: %v", err)
	}
	cause := errors.New("closed")
	ctx, cancel := context.WithCancelCause(t.Context())
	cancel(cause)
	if err := Sleep(ctx, time.Hour); !errors.Is(err, cause) {
		t.Fatalf("Sleep after cancel: %v, want the cause", err)
	}
}
