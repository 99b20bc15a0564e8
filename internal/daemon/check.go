package daemon

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/trueup-dev/trueup/internal/commitstatus"
	"github.com/trueup-dev/trueup/internal/config"
	"github.com/trueup-dev/trueup/sources"
)

// CheckSources builds, without a database, what Start builds of cfg once the database is
// open, and closes it: each source with its kind in kinds, its commit status reporter's and
// preview publisher's forge clients, and the notification sender. What these refuse (a
// URL's protocol, a missing SSH key or known_hosts file, a commit status's repo, a
// notification provider) is refused with every source named; nothing is started, fetched or
// written. Start calls it before it opens the database, `trueup config check` to check a
// config offline.
func CheckSources(cfg *config.Config, kinds *sources.Registry) error {
	logger := slog.New(slog.DiscardHandler)
	var errs []error
	for _, sc := range cfg.Sources {
		if err := checkSource(cfg, sc, kinds, logger); err != nil {
			errs = append(errs, err)
		}
	}
	if _, err := newSender(nil, cfg, "", nil, nil, logger); err != nil {
		errs = append(errs, err)
	}
	return cfg.ScrubError(errors.Join(errs...))
}

// checkSource builds sc's source, commit status and preview publisher as sourceSet.build
// does, and closes them.
func checkSource(cfg *config.Config, sc config.Source, kinds *sources.Registry, logger *slog.Logger) error {
	src, _, err := NewSource(kinds, cfg, sc, logger)
	if err != nil {
		return fmt.Errorf("source %s: %w", sc.Name, err)
	}
	defer func() { _ = src.Close() }()
	if sc.CommitStatus != nil {
		if err := commitstatus.Check(reporterConfig(cfg, sc)); err != nil {
			return fmt.Errorf("source %s: commitStatus: %w", sc.Name, err)
		}
	}
	if sc.PreviewEnabled() {
		if _, _, err := previewPublisher(sc, src); err != nil {
			return err
		}
	}
	return nil
}
