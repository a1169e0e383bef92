//! Closed-loop load on a tokio runtime, for the examples that measure a
//! remote engine: a fixed number of operations in flight.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Operations per second with `depth` tasks each doing one operation at a
/// time for `span`: `op(k)` does the `k`th and answers how many operations
/// it counts as (a row of several calls counts each), or 0 if it failed.
/// Panics if any failed.
pub async fn measure<F, Fut>(depth: usize, span: Duration, op: F) -> f64
where
    F: Fn(u64) -> Fut + Clone + Send + 'static,
    Fut: Future<Output = u64> + Send,
{
    let done = Arc::new(AtomicU64::new(0));
    let failed = Arc::new(AtomicU64::new(0));
    let next = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..depth {
        let (done, failed, next, op) = (
            Arc::clone(&done),
            Arc::clone(&failed),
            Arc::clone(&next),
            op.clone(),
        );
        tasks.spawn(async move {
            while started.elapsed() < span {
                let k = next.fetch_add(1, Ordering::Relaxed);
                match op(k).await {
                    0 => failed.fetch_add(1, Ordering::Relaxed),
                    n => done.fetch_add(n, Ordering::Relaxed),
                };
            }
        });
    }
    while tasks.join_next().await.is_some() {}
    let failed = failed.load(Ordering::Relaxed);
    assert_eq!(failed, 0, "operations failed");
    done.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64()
}
