//! Fault switches for the loom models' broken twins.
//!
//! Each switch turns one decision into its classic broken form at the one
//! place that decision is made (`store/protocol/decide.rs`, the creation seam in
//! `store/protocol/attach.rs`, `record.rs`, `quota.rs`, the sweep in `table.rs`, the generation check
//! and the visit's count in `slab.rs`), so
//! each model can prove it catches the bug it is about. Production bodies
//! contain no fault code. Loom runs all threads of one model on the test's
//! OS thread, so these thread-locals are per model, not global.
//!
//! Outside the model-checking build (`--cfg relaystore_loom`) [`active`] is
//! a constant `false`, so every twin folds away and nothing here is read.

#![cfg_attr(not(relaystore_loom), allow(dead_code))]

use std::cell::Cell;

std::thread_local! {
    /// Replace compare-and-swap with a blind store (records, counters).
    pub static BLIND_STORE: Cell<bool> = const { Cell::new(false) };
}

// Per modelled thread (loom runs them all on one OS thread): two
// renewals' early reads must not meet.
#[cfg(relaystore_loom)]
loom::thread_local! {
    /// A state read taken early, used by the next decision under the
    /// record's lock (the sweep's, a slab renewal's).
    pub(crate) static EARLY_READ: Cell<Option<u64>> = Cell::new(None);
}

/// Turns the blind-store fault on or off for this model.
pub fn blind_store(on: bool) {
    BLIND_STORE.with(|f| f.set(on));
}

/// Whether a compare-and-swap is to be replaced by a blind store now (the
/// records' and counters' twin). Never outside the model-checking build.
#[inline(always)]
pub(crate) fn blind_stores() -> bool {
    #[cfg(relaystore_loom)]
    return BLIND_STORE.with(|f| f.get());
    #[cfg(not(relaystore_loom))]
    return false;
}

/// The state word stashed by [`stash_early_read`] for this thread's next
/// decision under a record's lock, taken. Never one outside the
/// model-checking build.
#[inline(always)]
pub(crate) fn take_early_read() -> Option<u64> {
    #[cfg(relaystore_loom)]
    return EARLY_READ.with(|f| f.take());
    #[cfg(not(relaystore_loom))]
    return None;
}

/// Stashes a state word read early, for this thread's next decision under
/// the record's lock (check-then-act, the slab renewal's twin). Nothing
/// outside the model-checking build.
#[inline(always)]
pub(crate) fn stash_early_read(_state: u64) {
    #[cfg(relaystore_loom)]
    EARLY_READ.with(|f| f.set(Some(_state)));
}

/// A broken variant of one store decision, for the store models.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum StoreFault {
    /// Everything correct.
    None,
    /// The bind decision ignores the attempt's phase: every bind wins.
    BindIgnoresPhase,
    /// The consume decision ignores the attempt's phase: a consumed token
    /// is admitted again.
    ConsumeIgnoresPhase,
    /// `begin_join` does not register the attempt with its listing.
    JoinWithoutAttach,
    /// `revoke` writes the tombstone after removing the lease.
    TombstoneAfterRemoval,
    /// A creation treats a key held by a visible record as free: it
    /// removes the holder and takes the key.
    KeyHolderIgnored,
    /// The release decision ignores the fence.
    ReleaseUnfenced,
    /// The renewal decision ignores the deadline (resurrects an expired
    /// record).
    RenewIgnoresDeadline,
    /// A creation holds a unit of its table's store-wide ceiling while its
    /// narrow scopes (parent cap, tenant quota) are decided.
    SharedScopeFirst,
    /// A listener's future (or a wait for the drain's end) registers its
    /// waker after giving up the lock it looked for a pending wake (or the
    /// open latch) under.
    WakerAfterUnlock,
    /// The listen that creates a channel overwrites one another listen
    /// created meanwhile.
    ChannelOverwrite,
    /// A stream follower waits for a wake before its first read.
    WaitBeforeRead,
    /// A delivery (a notify to a wake listener, an event to a subscriber)
    /// looks for blocked receivers under one hold of the receiver's lock
    /// and delivers under another.
    SleepersReadEarly,
    /// A blocked receiver that wakes does not settle the signal that woke
    /// it: the next event delivered to it while it waits again is not
    /// signalled.
    SignalsNeverSettled,
    /// The sweep's batch does not check that a fired wheel entry is still
    /// the record's (its handle, or in a slab table its due tick) before
    /// deciding on the record.
    SweepIgnoresHandle,
    /// A claim picks the oldest ready job under one hold of the queue's
    /// lock and takes it under another.
    ClaimSplitHold,
    /// An ack checks its claim under one hold of the queue's lock and
    /// removes the job under another.
    AckSplitHold,
    /// An enqueue looks for waiting workers before it makes its job ready.
    WaitersReadEarly,
    /// A creation reads each store-wide limit from its counter, which a
    /// reconfiguration updates one after another, instead of all from one
    /// snapshot.
    LimitsReadApart,
    /// A schedule run checks that its runner leads before it takes the
    /// tenant's schedule book, not under it.
    LeaderCheckedOutside,
    /// A read of the collections a transaction writes does not check,
    /// after it read, that no commit began meanwhile.
    TxReadUnchecked,
    /// A mutation of those collections does not enter the commit gate.
    TxGateBypassed,
    /// A transaction's notify wakes its listeners when it is staged, not
    /// after the commit.
    TxWakeAtStaging,
    /// A slab lookup does not compare the key's generation with the
    /// slot's: a key reaches whatever record its slot holds now.
    SlotIgnoresGeneration,
    /// A read of a slab slot that takes no lock keeps what it loaded
    /// without looking at the slot's word again.
    SlotReadUnchecked,
    /// A tenant revocation counts itself only after it ended the epoch,
    /// with nothing marked while it works: a lease read that takes no
    /// lock may trust a record of the ended epoch.
    EpochEndUnmarked,
    /// A creation does not look at the store's state after it committed,
    /// so a record made while a drain ended is never taken back.
    StopUnchecked,
    /// A visit of every slab slot reads how many slots there are with a
    /// plain load, not a read-modify-write: it may miss a slot claimed by
    /// a creation that missed the drain's stop.
    SlabVisitLoadsCount,
    /// A read of a word snapshot (the store's limits, a tenant's quotas)
    /// keeps what it read without checking that no replacement began
    /// meanwhile.
    SnapshotUnchecked,
    /// A creation takes its tenant hold through its thread's last one with
    /// a plain increment, which also takes a unit on a tenant whose holds
    /// fell to zero and that the registry may be forgetting.
    HoldRevivesForgotten,
    /// A renewal of a slab record reads the record's state under one hold
    /// of its slot's lock and writes the next state under another.
    RenewalReadsApart,
    /// A read of a named record that takes no lock keeps the first live
    /// record under the name's hash tag without comparing the record's
    /// key with the name looked for.
    NameUnverified,
    /// A name index's rebuild marks its end before it has entered the live
    /// entries again.
    IndexEndMarkedEarly,
    /// A read of a name index trusts a miss without looking whether a
    /// rebuild was clearing the table it probed.
    IndexMissUnchecked,
    /// A read of a listing or of a presence record answers from the
    /// record's own words without reading its lease after them, so a
    /// child whose lease's revocation has not yet reached it reads as
    /// visible.
    ChildParentUnread,
}

std::thread_local! {
    static STORE_FAULT: Cell<StoreFault> = const { Cell::new(StoreFault::None) };
}

/// Sets the store fault for this model.
pub fn store_fault(fault: StoreFault) {
    STORE_FAULT.with(|f| f.set(fault));
}

/// Whether `fault` is switched on for this model.
#[cfg(relaystore_loom)]
pub(crate) fn active(fault: StoreFault) -> bool {
    STORE_FAULT.with(|f| f.get()) == fault
}

/// Never: only the model-checking build breaks anything.
#[cfg(not(relaystore_loom))]
#[inline(always)]
pub(crate) const fn active(_fault: StoreFault) -> bool {
    false
}
