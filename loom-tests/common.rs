//! Shared by the loom model files: runs a model and reports its size.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// Runs `body` under `loom::model`, prints how many interleavings were
/// explored and how long it took, and fails if only one was explored (a
/// model that explores nothing proves nothing).
pub fn explore(name: &str, body: impl Fn() + Sync + Send + 'static) {
    explore_with(name, loom::model::Builder::new(), body);
}

/// [`explore`] with at most `bound` preemptions, whatever
/// `LOOM_MAX_PREEMPTIONS` says: for a model whose threads each run a
/// whole store operation of many atomics, where a bound of 3 explores
/// millions of interleavings (the models that use it say so).
#[allow(dead_code)]
pub fn explore_bounded(name: &str, bound: usize, body: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(bound);
    explore_with(name, builder, body);
}

fn explore_with(
    name: &str,
    mut builder: loom::model::Builder,
    body: impl Fn() + Sync + Send + 'static,
) {
    // Loom's default of 1,000 steps an execution may take is fewer than a
    // model that sets up a store and then races two of its operations
    // takes (each atomic operation is a step).
    builder.max_branches = 10_000;
    let runs = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&runs);
    let started = Instant::now();
    builder.check(move || {
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
