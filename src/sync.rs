//! The one place that chooses between `std` and loom primitives.
//!
//! Every atomic and lock the store's concurrent code uses comes from here. A model-checking build (`RUSTFLAGS="--cfg relaystore_loom"`) swaps in
//! loom's versions so the models in `loom-tests/` explore the real transition
//! code. The cfg is named after the crate because some dependencies react to a
//! bare `loom` cfg.
//!
//! Locks are taken through [`lock`], [`read`] and [`write`], which ignore
//! poisoning: the store never panics while holding a lock except on a broken
//! internal invariant, and a relay is better served by continuing with the
//! data it has than by turning one panic into a panic on every later call.

#[cfg(not(relaystore_loom))]
pub(crate) use std::sync::{
    atomic::{AtomicBool, AtomicU64, Ordering},
    Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard,
};

#[cfg(relaystore_loom)]
pub(crate) use loom::sync::{
    atomic::{AtomicBool, AtomicU64, Ordering},
    Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard,
};

/// `Arc` is always std's: the store shares immutable data through it
/// (`Arc<str>` keys, `Arc<dyn Clock>`, per-tenant state) and relies on
/// unsized coercion and `From<&str>`, which loom's `Arc` lacks. Reference
/// counts are not what the models check; the atomics and locks are.
pub(crate) use std::sync::Arc;

/// Locks `mutex`, recovering the guard if a previous holder panicked.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Read-locks `lock`, recovering the guard if a previous holder panicked.
#[allow(dead_code)] // Only the loom stand-in map reads through a RwLock.
pub(crate) fn read<T>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Write-locks `lock`, recovering the guard if a previous holder panicked.
#[allow(dead_code)] // Only the loom stand-in map writes through a RwLock.
pub(crate) fn write<T>(lock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    lock.write()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
