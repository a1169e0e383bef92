//! Helpers shared by the bench files.
#![allow(dead_code)]

/// A small deterministic generator, so benches need no RNG dependency and
/// every run sees the same keys and deadlines.
pub struct XorShift(pub u64);

impl XorShift {
    /// The next pseudo-random word.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// A pseudo-random number in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// Pending-timer populations the issue asks for.
pub const SIZES: [usize; 2] = [10_000, 1_000_000];

/// Deadlines are spread over this window, like a minute of relay TTLs.
pub const WINDOW_MS: u64 = 60_000;

/// The driver tick used when draining expirations.
pub const TICK_MS: u64 = 10;

/// Runs `op(thread, i)` for `i` in `0..iters` on each of `threads` threads
/// started together at a barrier; returns the wall time of the slowest.
pub fn run_threads(
    threads: usize,
    iters: u64,
    op: impl Fn(usize, u64) + Send + Sync + Clone + 'static,
) -> std::time::Duration {
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(threads));
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let (barrier, op) = (barrier.clone(), op.clone());
            std::thread::spawn(move || {
                barrier.wait();
                let start = std::time::Instant::now();
                for i in 0..iters {
                    op(t, i);
                }
                start.elapsed()
            })
        })
        .collect();
    handles
        .into_iter()
        .map(|h| h.join().unwrap())
        .max()
        .unwrap()
}

/// Repeats `round` (which expires `per_round` records and returns the time
/// it took) until `iters` expirations are covered, and scales the total to
/// exactly `iters`.
pub fn scaled(
    iters: u64,
    per_round: u64,
    mut round: impl FnMut() -> std::time::Duration,
) -> std::time::Duration {
    let (mut total, mut done) = (std::time::Duration::ZERO, 0u64);
    while done < iters {
        total += round();
        done += per_round;
    }
    total.mul_f64(iters as f64 / done as f64)
}

/// Puts `n` keys into a tokio-util `DelayQueue` (key `i` due after
/// `ttl_ms(i)` ms) on a paused runtime, then drains it one `TICK_MS` tick
/// at a time; returns the time spent polling expired keys only.
pub fn delay_queue_drain(n: u64, mut ttl_ms: impl FnMut(u64) -> u64) -> std::time::Duration {
    use std::task::Poll;
    use std::time::{Duration, Instant};
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("tokio runtime");
    rt.block_on(async {
        let mut queue = tokio_util::time::DelayQueue::with_capacity(n as usize);
        for i in 0..n {
            queue.insert(i, Duration::from_millis(ttl_ms(i)));
        }
        let (mut elapsed, mut expired) = (Duration::ZERO, 0);
        while expired < n {
            tokio::time::advance(Duration::from_millis(TICK_MS)).await;
            let start = Instant::now();
            expired += std::future::poll_fn(|cx| {
                let mut k = 0;
                while let Poll::Ready(Some(e)) = queue.poll_expired(cx) {
                    std::hint::black_box(e);
                    k += 1;
                }
                Poll::Ready(k)
            })
            .await;
            elapsed += start.elapsed();
        }
        elapsed
    })
}

/// Criterion settings for the benches that compare several structures per
/// group: 10 samples of 2 s after 300 ms of warm-up, so a whole bench file
/// stays in minutes on two cores. Medians of several runs carry the claims.
pub fn short_runs() -> criterion::Criterion {
    criterion::Criterion::default()
        .sample_size(10)
        .warm_up_time(std::time::Duration::from_millis(300))
        .measurement_time(std::time::Duration::from_secs(2))
}
