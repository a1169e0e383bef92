//! Shared by the loom model files: runs a model and reports its size.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// Runs `body` under `loom::model`, prints how many interleavings were
/// explored and how long it took, and fails if only one was explored (a
/// model that explores nothing proves nothing).
pub fn explore(name: &str, body: impl Fn() + Sync + Send + 'static) {
    let runs = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&runs);
    let started = Instant::now();
    loom::model(move || {
        counter.fetch_add(1, Ordering::SeqCst);
        body();
    });
    let runs = runs.load(Ordering::SeqCst);
    eprintln!(
        "loom model {name}: {runs} interleavings in {:?}",
        started.elapsed()
    );
    assert!(runs > 1, "model {name} explored a single interleaving");
}
