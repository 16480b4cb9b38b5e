package model

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// StopReason says why a campaign ended before its plan was done ("" when it
// ran to the end).
type StopReason string

// Why a campaign stops early.
const (
	// StopBudget: its time budget ran out.
	StopBudget StopReason = "budget"
	// StopSignal: SIGINT or SIGTERM.
	StopSignal StopReason = "signal"
)

// Budget is a campaign's wall-clock limit (0: none). Results files write it as
// Go's duration text ("20m0s"); it reads that text, a JSON number of
// nanoseconds (time.Duration's encoding, which result.json used), and the
// comma-joined texts that merged summaries once wrote (the longest budget).
type Budget time.Duration

// D is b as a time.Duration.
func (b Budget) D() time.Duration { return time.Duration(b) }

// String is time.Duration's text, "" for no budget.
func (b Budget) String() string {
	if b <= 0 {
		return ""
	}
	return time.Duration(b).String()
}

// MarshalJSON writes the duration text.
func (b Budget) MarshalJSON() ([]byte, error) { return json.Marshal(b.String()) }

// UnmarshalJSON reads the forms Budget documents.
func (b *Budget) UnmarshalJSON(data []byte) error {
	s := strings.TrimSpace(string(data))
	if s == "null" {
		*b = 0
		return nil
	}
	if !strings.HasPrefix(s, `"`) {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return fmt.Errorf("budget %s: want a duration such as \"20m0s\": %w", s, err)
		}
		*b = Budget(n)
		return nil
	}
	var text string
	if err := json.Unmarshal(data, &text); err != nil {
		return err
	}
	var longest time.Duration
	for _, part := range strings.Split(text, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		d, err := time.ParseDuration(part)
		if err != nil {
			return fmt.Errorf("budget %q: want a duration such as \"20m0s\": %w", text, err)
		}
		longest = max(longest, d)
	}
	*b = Budget(longest)
	return nil
}
