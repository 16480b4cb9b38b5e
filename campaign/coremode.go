package campaign

import (
	"errors"
	"fmt"
)

// Modes of checking core-typed values with the API server while planning (`gauntlet gen` and
// `gauntlet run --validate-core`).
const (
	// CoreCheckAuto checks when the pinned control plane is built, and plans without otherwise
	// (with a warning). A sharded campaign turns it into CoreCheckOn: see CoreCheckMode.
	CoreCheckAuto = "auto"
	// CoreCheckOn requires the check: planning fails without an API server.
	CoreCheckOn = "on"
	// CoreCheckOff plans without the check.
	CoreCheckOff = "off"
)

// ErrCoreCheckMode is returned for a mode other than auto, on and off.
var ErrCoreCheckMode = errors.New("--validate-core takes auto, on or off")

// ErrCoreCheckMismatch is returned when a resumed campaign is asked to plan otherwise than it
// did: its plan is the recorded one.
var ErrCoreCheckMismatch = errors.New("a resumed campaign keeps the plan it started with, and so whether the API server judged its core-typed values")

// CoreCheckMode resolves a --validate-core mode for a new campaign. Every shard plans on its own
// machine and the check changes the plan, so a shard must not fall back silently where another
// shard checked: with a shard, auto means on (pass off to every shard to plan without the
// check).
func CoreCheckMode(mode string, shard Shard) (string, error) {
	switch mode {
	case CoreCheckOn, CoreCheckOff:
		return mode, nil
	case CoreCheckAuto, "":
		if !shard.IsZero() {
			return CoreCheckOn, nil
		}
		return CoreCheckAuto, nil
	}
	return "", fmt.Errorf("%q: %w", mode, ErrCoreCheckMode)
}

// CheckCoreValidation checks a resume's --validate-core against what the campaign recorded:
// given is false when the flag was not passed (the recorded plan is used either way); on for a
// plan made without the check, or off for one made with it, is refused.
func CheckCoreValidation(start *StartRecord, mode string, given bool) error {
	if !given {
		return nil
	}
	switch mode {
	case CoreCheckAuto:
		return nil
	case CoreCheckOn:
		if !start.CoreValidated {
			return fmt.Errorf("--validate-core=on, but the campaign was planned without the API server's check: drop the flag to resume it: %w", ErrCoreCheckMismatch)
		}
	case CoreCheckOff:
		if start.CoreValidated {
			return fmt.Errorf("--validate-core=off, but the campaign was planned with the API server's check: drop the flag to resume it: %w", ErrCoreCheckMismatch)
		}
	default:
		return fmt.Errorf("%q: %w", mode, ErrCoreCheckMode)
	}
	return nil
}
