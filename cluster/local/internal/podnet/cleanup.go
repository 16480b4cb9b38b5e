package podnet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// cleanup removes, from disk state and interface names alone, everything a
// Network with cfg may own. Every step tolerates things already gone.
func cleanup(ctx context.Context, host *netlink.Handle, cfg Config, log *slog.Logger) error {
	dirs := newStateDirs(cfg.StateDir)
	var errs []error
	recs, err := dirs.readRecords()
	if err != nil {
		errs = append(errs, err)
	}
	// Veths: the recorded ones, and any with the cluster's prefix (a crash can
	// come at any point; names derive from the cluster name alone).
	for _, r := range recs {
		if err := deleteLinkByName(host, r.HostVeth); err != nil {
			errs = append(errs, err)
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	links, err := retryDump(host.LinkList)
	if err != nil {
		errs = append(errs, fmt.Errorf("podnet: list links: %w", err))
	}
	prefix, bridge := vethNamePrefix(cfg.Name), bridgeName(cfg.Name)
	for _, l := range links {
		name := l.Attrs().Name
		if (strings.HasPrefix(name, prefix) && l.Type() == "veth") || (name == bridge && l.Type() == "bridge") {
			if err := host.LinkDel(l); err != nil && !isLinkNotFound(err) {
				errs = append(errs, fmt.Errorf("podnet: delete %s %s: %w", l.Type(), name, err))
			} else {
				log.Debug("deleted link", "name", name, "type", l.Type())
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	// Namespace files, then the folder's own shared bind mount.
	entries, err := os.ReadDir(dirs.netns)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, fmt.Errorf("podnet: read namespace folder: %w", err))
	}
	for _, e := range entries {
		if err := removeNetNSFile(filepath.Join(dirs.netns, e.Name())); err != nil {
			errs = append(errs, err)
		}
	}
	if err := unmountAll(dirs.netns); err != nil {
		errs = append(errs, err)
	}
	if err := os.Remove(dirs.netns); err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, fmt.Errorf("podnet: remove namespace folder: %w", err))
	}
	if len(errs) > 0 {
		// Keep the records: they are how the next Cleanup finds the rest.
		return fmt.Errorf("podnet: cleanup of cluster %q incomplete (call Cleanup again): %w", cfg.Name, errors.Join(errs...))
	}
	if err := os.RemoveAll(filepath.Dir(dirs.records)); err != nil {
		return fmt.Errorf("podnet: remove sandbox records: %w", err)
	}
	return nil
}

// deleteLinkByName deletes a link; a missing one is fine.
func deleteLinkByName(h *netlink.Handle, name string) error {
	l, err := h.LinkByName(name)
	if isLinkNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("podnet: look up %s: %w", name, err)
	}
	if err := h.LinkDel(l); err != nil && !isLinkNotFound(err) {
		return fmt.Errorf("podnet: delete %s: %w", name, err)
	}
	return nil
}

func isLinkNotFound(err error) bool {
	var nf netlink.LinkNotFoundError
	return errors.As(err, &nf) || errors.Is(err, unix.ENODEV)
}

// retryDump repeats a netlink dump the kernel interrupted because the table
// changed meanwhile (other clusters add and remove links all the time).
func retryDump[T any](dump func() ([]T, error)) ([]T, error) {
	for i := 0; ; i++ {
		v, err := dump()
		if errors.Is(err, netlink.ErrDumpInterrupted) && i < 10 {
			continue
		}
		return v, err
	}
}

func summarize(items []string, max int) string {
	if len(items) <= max {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(items[:max], ", "), len(items)-max)
}
