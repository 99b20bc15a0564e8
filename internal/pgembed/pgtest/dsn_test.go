package pgtest

import "testing"

func TestWithDatabase(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ dsn, want string }{
		{"postgres://u:p@db:5432/postgres?sslmode=disable", "postgres://u:p@db:5432/test_1?sslmode=disable"},
		{"postgresql://u@/postgres?host=%2Fsock", "postgresql://u@/test_1?host=%2Fsock"},
		{"postgres://u@db/postgres?dbname=postgres&sslmode=disable", "postgres://u@db/test_1?sslmode=disable"},
		{"host=db user=u dbname=postgres", "host=db user=u dbname=postgres dbname=test_1"},
	} {
		if got := withDatabase(tc.dsn, "test_1"); got != tc.want {
			t.Errorf("withDatabase(%q) = %q, want %q", tc.dsn, got, tc.want)
		}
	}
}

func TestRedact(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ dsn, want string }{
		{"postgres://u:secret@db/postgres", "postgres://u:xxxxx@db/postgres"},
		{"postgres://u@db/postgres?password=secret", "postgres://u@db/postgres?password=xxxxx"},
		{"host=db password=secret", "(connection string)"},
		{"host=db user=u", "host=db user=u"},
	} {
		if got := redact(tc.dsn); got != tc.want {
			t.Errorf("redact(%q) = %q, want %q", tc.dsn, got, tc.want)
		}
	}
}
