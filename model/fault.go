package model

// FaultKind names a fault a campaign injects and a replay re-injects (Fault.Kind).
type FaultKind string

// Fault kinds: the one vocabulary of campaign, replay and reports (package
// faults has its injectors' own kinds, which replay maps these onto).
const (
	// FaultContainerCrash kills the target's container process (its restart policy applies).
	FaultContainerCrash FaultKind = "container-crash"
	// FaultPodKill deletes the target pod with grace period 0.
	FaultPodKill FaultKind = "pod-kill"
	// FaultPodFailure freezes the target's container for the hold time.
	FaultPodFailure FaultKind = "pod-failure"
	// FaultPartition cuts the target pod off from the other pods of the system for the hold time.
	FaultPartition FaultKind = "partition"
	// FaultOperatorCrash kills the operator at a random moment while it reconciles a new
	// desired state (the intermediate-state bugs of Sieve and Anvil).
	FaultOperatorCrash FaultKind = "operator-crash"
	// FaultOperatorPartition cuts the operator off from the API server while a new desired
	// state is declared, then heals.
	FaultOperatorPartition FaultKind = "operator-partition"
)

// Fault kinds of the operator's view (package view: a proxy between the operator
// and the API server). Campaigns inject them when named (`--faults stale-read`,
// with the proxy on), held while the next desired state is declared; FaultKinds
// leaves them out (`--faults all` adds them only with --operator-view).
const (
	// FaultStaleRead serves the operator's reads and watch events as the
	// cluster was a while ago (a lagging view: Sieve's stale states).
	FaultStaleRead FaultKind = "stale-read"
	// FaultMissedEvent withholds chosen watch events from the operator (a
	// delete, a status-only update: Sieve's unobserved states).
	FaultMissedEvent FaultKind = "missed-event"
	// FaultCrashAfterWrite cuts the operator off right after a chosen write of
	// its own reached the API server, before it sees the answer, and restarts
	// it (Sieve's intermediate states).
	FaultCrashAfterWrite FaultKind = "crash-after-write"
)

// ViewFaultKinds are the kinds of the operator's view.
func ViewFaultKinds() []FaultKind {
	return []FaultKind{FaultStaleRead, FaultMissedEvent, FaultCrashAfterWrite}
}

// View reports whether k perturbs the operator's view of the API server.
func (k FaultKind) View() bool {
	for _, x := range ViewFaultKinds() {
		if x == k {
			return true
		}
	}
	return false
}

// FaultKinds are every fault kind, in the order a campaign draws them by default.
func FaultKinds() []FaultKind {
	return []FaultKind{FaultContainerCrash, FaultPodKill, FaultPodFailure, FaultPartition, FaultOperatorCrash, FaultOperatorPartition}
}

// Lasting reports whether faults of kind k hold until removed (they can be held
// while a new desired state is declared): the view kinds are.
func (k FaultKind) Lasting() bool {
	return k == FaultPodFailure || k == FaultPartition || k == FaultOperatorPartition || k.View()
}

// Known reports whether k is one of FaultKinds.
func (k FaultKind) Known() bool {
	for _, x := range FaultKinds() {
		if x == k {
			return true
		}
	}
	return false
}
