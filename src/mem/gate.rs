//! The commit gate: what makes a transaction's commit atomic (ADR 0028).
//!
//! Two halves, one for each kind of caller of the collections a
//! transaction writes (listings, streams, queues, schedules):
//!
//! - **Mutations enter** the gate (shared): a counter per slot, picked by
//!   thread, so two threads entering do not share a cache line. A commit
//!   *closes* the gate: it raises `closed`, waits until every slot reads
//!   zero, and applies its changes while no mutation is inside. A mutation
//!   that finds the gate closed steps out again, waits for the commit on
//!   the commit lock (which the commit holds throughout) and enters while
//!   holding it, so it waits for one commit at most.
//!   Each side writes its flag and then reads the other's, all
//!   sequentially consistent (the commit also fences), so either the commit
//!   sees the mutation's count or the mutation sees `closed`: the
//!   store-buffering pattern, which `loom-tests/tx.rs` checks (with a
//!   fence on the mutation's side too, since loom models fences but not
//!   the single order of sequentially consistent accesses).
//! - **Reads write nothing shared**: they run under a sequence lock. The
//!   commit makes `epoch` odd before its first change and even again after
//!   its last; a read that saw an odd epoch, or a different one after it
//!   read, reads again under the commit lock (which waits for the commit
//!   in flight, and lets no other start). A read that returns saw all of
//!   a commit or none of it, and waited for one commit at most.
//!
//! Entering is re-entrant per thread (a mutation that calls another enters
//! once), and the committing thread passes through both halves. Nothing
//! that can wait on another thread runs inside the gate: blocking waits
//! and caller code (an outbox handler) run outside it.

use crate::base::faults::{self, StoreFault};
use crate::base::sync::{
    fence, lock_at, model_seq_cst_fence, sized, thread_cell, thread_slot, AtomicBool, AtomicU64,
    Mutex, Ordering, Ranked, Rung,
};
use crossbeam_utils::CachePadded;
use std::cell::Cell;

/// Slots that entering threads spread over; two in the model-checking
/// build: enough for two threads to count apart, few enough to keep the
/// commit's scan small.
const SLOTS: usize = sized(16, 2);

/// Tells one store's gate from another's in a thread's record.
static GATES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// What this thread holds: the gate it is inside (its id), how deep, and
/// whether it is that gate's committer.
#[derive(Clone, Copy, Default)]
struct Held {
    gate: u64,
    depth: u32,
    committing: bool,
}

thread_cell! {
    static HELD: Cell<Held> = Cell::new(Held { gate: 0, depth: 0, committing: false });
}

/// This thread's slot.
fn slot() -> usize {
    thread_slot(SLOTS)
}

pub(crate) struct Gate {
    id: u64,
    /// Odd while a commit applies its changes.
    epoch: AtomicU64,
    /// Raised while a commit waits for mutations to leave, or applies.
    closed: AtomicBool,
    /// Mutations inside, per slot.
    inside: [CachePadded<AtomicU64>; SLOTS],
    /// Held by a commit from closing to opening: commits run one at a
    /// time, and a mutation or read that finds one waits on it here.
    commits: Mutex<()>,
}

/// A mutation inside the gate; leaves on drop.
#[must_use]
pub(crate) struct Inside<'g> {
    gate: &'g Gate,
    /// The slot it counts in; `None` for a nested entry (or the committer).
    slot: Option<usize>,
    /// What the thread held before (another store's gate, say).
    before: Held,
}

/// A closed gate: the holder applies a commit. Opens on drop.
#[must_use]
pub(crate) struct Closed<'g> {
    gate: &'g Gate,
    before: Held,
    _commit: Ranked<'g, ()>,
}

impl Default for Gate {
    fn default() -> Self {
        Gate {
            id: GATES.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            epoch: AtomicU64::new(0),
            closed: AtomicBool::new(false),
            inside: std::array::from_fn(|_| CachePadded::new(AtomicU64::new(0))),
            commits: Mutex::new(()),
        }
    }
}

impl Gate {
    fn held(&self) -> Option<Held> {
        let held = HELD.with(Cell::get);
        (held.gate == self.id && (held.depth > 0 || held.committing)).then_some(held)
    }

    /// Enters for a mutation: waits while a commit applies.
    pub(crate) fn enter(&self) -> Inside<'_> {
        let before = HELD.with(Cell::get);
        if let Some(mut held) = self.held() {
            held.depth += 1;
            HELD.with(|h| h.set(held));
            return Inside {
                gate: self,
                slot: None,
                before,
            };
        }
        let slot = slot();
        if !faults::active(StoreFault::TxGateBypassed) && !self.try_enter(slot) {
            // A commit is closing or applying: wait for it on its lock, and
            // enter while holding the lock (no commit is closing then), so
            // no later commit can overtake this mutation.
            let _commit = lock_at(Rung::Gate, &self.commits);
            self.inside[slot].fetch_add(1, Ordering::SeqCst);
        }
        HELD.with(|h| {
            h.set(Held {
                gate: self.id,
                depth: 1,
                committing: false,
            })
        });
        Inside {
            gate: self,
            slot: Some(slot),
            before,
        }
    }

    fn try_enter(&self, slot: usize) -> bool {
        self.inside[slot].fetch_add(1, Ordering::SeqCst);
        // The increment and the load are both sequentially consistent, so
        // the single order of such operations keeps them in this order,
        // and a commit's `closed` store (followed by its fence) is either
        // before the load (seen here) or after the increment (the commit
        // sees the count). Loom models sequentially consistent accesses
        // as acquire/release only; its build adds the fence it can model.
        model_seq_cst_fence();
        if !self.closed.load(Ordering::SeqCst) {
            return true;
        }
        self.inside[slot].fetch_sub(1, Ordering::Release);
        false
    }

    /// Runs `read` so that its result saw every commit whole or not at
    /// all: once optimistically (writing nothing shared), and if a commit
    /// overlapped it, once more under the commit lock.
    ///
    /// The optimistic read is inlined into the caller, and the check of
    /// whether this thread is inside the gate waits for the slow way, so
    /// a plain read makes no call and reads no thread-local (a hot
    /// presence read 0.95x, a lease or listing read unchanged, five
    /// alternating runs).
    #[inline(always)]
    pub(crate) fn read<R>(&self, mut read: impl FnMut() -> R) -> R {
        // A thread inside the gate (a mutation, or the committer) sees
        // the epoch even and unmoved (no commit closes while a mutation
        // is inside), or odd (its own commit): the optimistic read or the
        // slow way's own check of `held` serve it.
        let before = self.epoch.load(Ordering::Acquire);
        if before & 1 == 0 {
            let seen = read();
            if faults::active(StoreFault::TxReadUnchecked)
                || self.epoch.load(Ordering::Acquire) == before
            {
                return seen;
            }
        }
        self.read_slow(read)
    }

    /// A read that overlapped a commit, or ran inside one.
    #[cold]
    #[inline(never)]
    fn read_slow<R>(&self, mut read: impl FnMut() -> R) -> R {
        if self.held().is_some() {
            // A mutation inside sees no commit in flight; the committer
            // reads its own changes.
            return read();
        }
        // A commit was in flight: read again under the commit lock, which
        // waits for it and lets no other commit start meanwhile. So a read
        // waits for at most the commit in flight, however many follow.
        let _commit = lock_at(Rung::Gate, &self.commits);
        read()
    }

    /// Closes the gate for a commit: waits for the commit before it, then
    /// for every mutation inside to leave. `None` if this thread is inside
    /// the gate itself (a commit from within a mutation would wait on
    /// itself).
    pub(crate) fn close(&self) -> Option<Closed<'_>> {
        if self.held().is_some() {
            return None;
        }
        let before = HELD.with(Cell::get);
        let commit = lock_at(Rung::Gate, &self.commits);
        self.closed.store(true, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        while self.inside.iter().any(|n| n.load(Ordering::SeqCst) != 0) {
            crate::base::sync::spin_wait();
        }
        self.epoch.fetch_add(1, Ordering::SeqCst);
        HELD.with(|h| {
            h.set(Held {
                gate: self.id,
                depth: 0,
                committing: true,
            })
        });
        Some(Closed {
            gate: self,
            before,
            _commit: commit,
        })
    }

    /// Whether this thread is inside the gate or commits through it (for
    /// the debug checks of the collections' mutations).
    pub(crate) fn entered(&self) -> bool {
        self.held().is_some()
    }
}

impl Drop for Inside<'_> {
    fn drop(&mut self) {
        HELD.with(|h| h.set(self.before));
        if let Some(slot) = self.slot {
            if !faults::active(StoreFault::TxGateBypassed) {
                // Release: what the mutation did happens before the
                // commit that reads this count as zero.
                self.gate.inside[slot].fetch_sub(1, Ordering::Release);
            }
        }
    }
}

impl Drop for Closed<'_> {
    fn drop(&mut self) {
        HELD.with(|h| h.set(self.before));
        self.gate.epoch.fetch_add(1, Ordering::SeqCst);
        self.gate.closed.store(false, Ordering::SeqCst);
        // The commit lock is given up after this, as the field drops.
    }
}

#[cfg(all(test, not(relaystore_loom)))]
mod tests {
    use super::*;

    #[test]
    fn entering_nests_and_a_commit_from_inside_is_refused() {
        let gate = Gate::default();
        let outer = gate.enter();
        let inner = gate.enter();
        assert!(gate.entered());
        assert!(
            gate.close().is_none(),
            "a commit from inside would wait on itself"
        );
        drop(inner);
        assert!(gate.entered());
        drop(outer);
        assert!(!gate.entered());
        assert_eq!(
            gate.inside
                .iter()
                .map(|n| n.load(Ordering::SeqCst))
                .sum::<u64>(),
            0
        );
        let closed = gate.close().expect("nothing inside");
        assert!(gate.entered(), "the committer passes through");
        let nested = gate.enter();
        assert_eq!(gate.read(|| 7), 7, "the committer reads through the gate");
        drop(nested);
        assert_eq!(gate.epoch.load(Ordering::SeqCst), 1);
        drop(closed);
        assert_eq!(gate.epoch.load(Ordering::SeqCst), 2);
        assert!(!gate.entered());
    }

    #[test]
    fn a_read_that_overlaps_a_commit_is_read_again() {
        let gate = Gate::default();
        let mut tries = 0;
        let seen = gate.read(|| {
            tries += 1;
            if tries == 1 {
                // A commit begins and ends while this read runs.
                gate.epoch.fetch_add(2, Ordering::SeqCst);
            }
            tries
        });
        assert_eq!(seen, 2);
    }

    #[test]
    fn two_gates_are_entered_apart() {
        let (a, b) = (Gate::default(), Gate::default());
        let in_a = a.enter();
        assert!(!b.entered());
        let closed = b.close().expect("inside another gate only");
        drop(closed);
        let in_b = b.enter();
        drop(in_b);
        assert!(
            a.entered(),
            "leaving b gives back what the thread held in a"
        );
        drop(in_a);
        assert!(!a.entered());
    }
}
