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
