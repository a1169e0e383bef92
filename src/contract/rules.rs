//! The contract's rules, each written once: what every engine checks before
//! it changes anything (names, attributes, schedules, a queue's and a
//! stream's settings, a job, a TTL) and the formulas every engine computes
//! alike. Each is a pure function of its inputs and the configuration, with a
//! table test; the Redis engine receives what they compute from Rust, or a
//! conformance check runs the same table on both engines.

use crate::base::error::{Error, Result};
use crate::base::time::{duration_to_millis_ceil, MonoTime, DEADLINE_MAX_MS};
use crate::contract::config::StoreConfig;
use crate::contract::group::GroupConfig;
use crate::contract::names::{OUTBOX_QUEUE, RESERVED_PREFIX};
use crate::contract::queue::{JobOptions, QueueConfig, PRIORITY_MAX};
use crate::contract::stream::StreamConfig;
use std::time::{Duration, SystemTime};

impl StoreConfig {
    /// A change of configuration at run time, from `self` (in force) to
    /// `next` (every engine's one rule): `InvalidConfig` naming the first
    /// field other than the run-time ones that differs.
    pub(crate) fn check_run_time_change(&self, next: &StoreConfig) -> Result<()> {
        let current = self;
        macro_rules! fixed {
            ($($field:ident),* $(,)?) => {
                $(if current.$field != next.$field {
                    return Err(Error::InvalidConfig {
                        field: stringify!($field),
                        rule: "cannot change at run time",
                        values: format!(
                            "{} = {:?} now, {:?} asked",
                            stringify!($field),
                            current.$field,
                            next.$field
                        ),
                    });
                })*
            };
        }
        fixed!(
            ttl_min,
            ttl_max,
            listings_per_lease_max,
            attempts_per_listing_max,
            endpoints_per_lease_max,
            presence_per_lease_max,
            locks_per_lease_max,
            streams_per_lease_max,
            attrs_bytes_max,
            name_bytes_max,
            page_len_max,
            replay_grace,
            tombstone_ttl,
            idempotency_ttl,
            subscriber_buffer_max,
            wake_queue_max,
            wake_payload_bytes_max,
            stream_entries_max,
            stream_bytes_max,
            stream_payload_bytes_max,
            consumers_per_stream_max,
            queue_jobs_max,
            queue_bytes_max,
            job_payload_bytes_max,
            schedule_interval_min,
            schedule_interval_max,
            driver_stall_max,
            drain_window_max,
            fence_floor,
            kinds,
        );
        // Every field is either run-time or listed above: a field added to the
        // configuration and to neither fails here, in every test.
        let mut rest = next.clone();
        macro_rules! run_time {
            ($($field:ident),* $(,)?) => {
                $(rest.$field = current.$field.clone();)*
            };
        }
        run_time!(
            leases_max,
            listings_max,
            presence_max,
            attempts_max,
            replay_max,
            idempotency_max,
            tombstones_max,
            locks_max,
            tenants_max,
            tenant,
            streams_max,
            streams_per_tenant_max,
            stream_bytes_total_max,
            stream_entries_total_max,
            queues_max,
            queues_per_tenant_max,
            queue_jobs_total_max,
            queue_bytes_total_max,
            schedules_max,
            schedules_per_tenant_max,
            listeners_max,
            listeners_per_channel_max,
            channels_per_tenant_max,
            subscribers_max,
        );
        assert_eq!(
            &rest, current,
            "a configuration field is neither fixed nor run-time"
        );
        Ok(())
    }

    /// The name rules every engine applies (holders, keys, members, lock
    /// names, clients, idempotency keys): non-empty
    /// ([`Error::InvalidName`]), at most `name_bytes_max` bytes
    /// ([`Error::InvalidArgument`]).
    pub(crate) fn check_name(&self, name: &str) -> Result<()> {
        if name.is_empty() {
            return Err(Error::InvalidName);
        }
        if name.len() > self.name_bytes_max {
            return Err(Error::InvalidArgument {
                reason: "name is longer than name_bytes_max",
            });
        }
        Ok(())
    }

    /// The name of something a caller creates beside the store's own (a
    /// lock, a wake channel, a stream, a queue, a schedule):
    /// [`check_name`](Self::check_name)'s rules, and not the reserved
    /// `__` prefix ([`Error::ReservedName`]).
    pub(crate) fn check_own_name(&self, name: &str) -> Result<()> {
        if name.starts_with(RESERVED_PREFIX) {
            return Err(Error::ReservedName);
        }
        self.check_name(name)
    }

    /// A notify's channel and payload (every engine's one rule): the
    /// channel is the caller's own name
    /// ([`check_own_name`](Self::check_own_name)), the payload at most
    /// `wake_payload_bytes_max` bytes ([`Error::InvalidArgument`]).
    pub(crate) fn check_notify(&self, channel: &str, payload: &[u8]) -> Result<()> {
        self.check_own_name(channel)?;
        if payload.len() > self.wake_payload_bytes_max {
            return Err(Error::InvalidArgument {
                reason: "payload is larger than wake_payload_bytes_max",
            });
        }
        Ok(())
    }

    /// The name rule of a queue being inspected or tidied (`job`,
    /// `queue_info`, dead letters): a caller's own name, or the outbox's
    /// reserved queue.
    pub(crate) fn check_inspected_queue(&self, name: &str) -> Result<()> {
        if name == OUTBOX_QUEUE {
            Ok(())
        } else {
            self.check_own_name(name)
        }
    }

    /// A schedule's name, spec, queue and payload (every engine's one
    /// rule): its interval in milliseconds.
    pub(crate) fn check_schedule(
        &self,
        name: &str,
        spec: &str,
        queue: &str,
        payload: &[u8],
    ) -> Result<u64> {
        self.check_own_name(name)?;
        self.check_own_name(queue)?;
        if payload.len() > self.job_payload_bytes_max {
            return Err(Error::InvalidArgument {
                reason: "payload is larger than job_payload_bytes_max",
            });
        }
        ScheduleLimits::of(self).interval_ms(spec)
    }

    /// The attribute rule every engine applies: at most `attrs_bytes_max`
    /// bytes ([`Error::InvalidArgument`]).
    pub(crate) fn check_attrs(&self, attrs: &[u8]) -> Result<()> {
        if attrs.len() > self.attrs_bytes_max {
            return Err(Error::InvalidArgument {
                reason: "attributes are larger than attrs_bytes_max",
            });
        }
        Ok(())
    }

    /// A page's `limit` (listings, presence): in `1..=page_len_max`.
    pub(crate) fn check_page_limit(&self, limit: usize) -> Result<()> {
        if limit == 0 || limit > self.page_len_max {
            return Err(Error::InvalidArgument {
                reason: "limit must be in 1..=page_len_max",
            });
        }
        Ok(())
    }

    /// How many of `asked` items one read hands back (stream entries, dead
    /// letters): at most `page_len_max`.
    pub(crate) fn page_cap(&self, asked: usize) -> usize {
        asked.min(self.page_len_max)
    }

    /// A claim's batch: `max_jobs` must be positive, and at most
    /// `page_len_max` jobs are handed out at once.
    pub(crate) fn claim_batch(&self, max_jobs: usize) -> Result<usize> {
        if max_jobs == 0 {
            return Err(Error::InvalidArgument {
                reason: "max_jobs must be positive",
            });
        }
        Ok(self.page_cap(max_jobs))
    }

    /// An enqueue batch's length: from 1 to `page_len_max` jobs.
    pub(crate) fn check_enqueue_batch(&self, len: usize) -> Result<()> {
        self.check_batch(len, "an enqueue batch holds 1 to page_len_max jobs")
    }

    /// A unique job's key and window, for an enqueue of `jobs` jobs (every
    /// engine's one rule): the key is a caller's name
    /// ([`check_name`](Self::check_name)), the window at most `ttl_max`,
    /// and one job per key (`InvalidArgument` for a batch of more).
    pub(crate) fn check_unique(&self, options: &JobOptions, jobs: usize) -> Result<()> {
        let Some(unique) = &options.unique else {
            return Ok(());
        };
        self.check_name(&unique.key)?;
        if unique.window > self.ttl_max {
            return Err(Error::InvalidArgument {
                reason: "a unique job's window is above ttl_max",
            });
        }
        if jobs > 1 {
            return Err(Error::InvalidArgument {
                reason: "a unique key takes one job, not a batch",
            });
        }
        Ok(())
    }

    /// A consumer group's batch of offsets to acknowledge: from 1 to
    /// `page_len_max` offsets.
    pub(crate) fn check_group_acks(&self, len: usize) -> Result<()> {
        self.check_batch(len, "a group's ack holds 1 to page_len_max offsets")
    }

    /// How many entries a group read or idle claim hands out: `max` must
    /// be positive, and at most `page_len_max` go at once.
    pub(crate) fn group_batch(&self, max: usize) -> Result<usize> {
        if max == 0 {
            return Err(Error::InvalidArgument {
                reason: "a group read's max must be positive",
            });
        }
        Ok(self.page_cap(max))
    }

    /// An ack batch's length: from 1 to `page_len_max` acks.
    pub(crate) fn check_ack_batch(&self, len: usize) -> Result<()> {
        self.check_batch(len, "an ack batch holds 1 to page_len_max acks")
    }

    fn check_batch(&self, len: usize, reason: &'static str) -> Result<()> {
        if len == 0 || len > self.page_len_max {
            return Err(Error::InvalidArgument { reason });
        }
        Ok(())
    }

    /// A drain's `window`: at most `drain_window_max`.
    pub(crate) fn check_drain_window(&self, window: Duration) -> Result<()> {
        if window > self.drain_window_max {
            return Err(Error::InvalidArgument {
                reason: "drain window is longer than drain_window_max",
            });
        }
        Ok(())
    }
}

/// Parses `@every <interval>`: one or more `<number><unit>` parts with
/// units `d`, `h`, `m`, `s`, `ms`, from the largest to the smallest, each
/// at most once (`@every 30s`, `@every 1h30m`, `@every 1s500ms`). Anything
/// else is `InvalidArgument` naming the problem; a zero interval too.
pub fn parse_every(spec: &str) -> Result<Duration> {
    let invalid = |reason| Err(Error::InvalidArgument { reason });
    let Some(rest) = spec.strip_prefix("@every ") else {
        return invalid("a schedule must be \"@every <interval>\"");
    };
    if rest.is_empty() {
        return invalid("a schedule's interval is missing");
    }
    const UNITS: [(&str, u64); 5] = [
        ("d", 86_400_000),
        ("h", 3_600_000),
        ("ms", 1),
        ("m", 60_000),
        ("s", 1_000),
    ];
    // Rank of each unit, largest first, to enforce the order.
    let rank = |unit: &str| match unit {
        "d" => 0,
        "h" => 1,
        "m" => 2,
        "s" => 3,
        _ => 4,
    };
    let mut total: u64 = 0;
    let mut last_rank: Option<u32> = None;
    let mut text = rest;
    while !text.is_empty() {
        let digits = text.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return invalid("a schedule's interval needs a number before each unit");
        }
        let Ok(number) = text[..digits].parse::<u64>() else {
            return invalid("a schedule's interval is too long");
        };
        text = &text[digits..];
        let Some(&(unit, ms)) = UNITS.iter().find(|(u, _)| text.starts_with(u)) else {
            return invalid("a schedule's interval needs a unit: ms, s, m, h or d");
        };
        text = &text[unit.len()..];
        let r = rank(unit);
        if last_rank.is_some_and(|l| r <= l) {
            return invalid("a schedule's units must go from largest to smallest, each once");
        }
        last_rank = Some(r);
        let Some(sum) = number.checked_mul(ms).and_then(|p| total.checked_add(p)) else {
            return invalid("a schedule's interval is too long");
        };
        total = sum;
    }
    if total == 0 {
        return invalid("a schedule's interval must be positive");
    }
    Ok(Duration::from_millis(total))
}

/// The store-wide bounds on schedules.
pub(crate) struct ScheduleLimits {
    pub(crate) interval_min: Duration,
    pub(crate) interval_max: Duration,
}

impl ScheduleLimits {
    pub(crate) fn of(config: &StoreConfig) -> Self {
        ScheduleLimits {
            interval_min: config.schedule_interval_min,
            interval_max: config.schedule_interval_max,
        }
    }

    /// The interval of `spec` in milliseconds, within the configured range
    /// (every engine's one rule).
    pub(crate) fn interval_ms(&self, spec: &str) -> Result<u64> {
        let interval = parse_every(spec)?;
        if interval < self.interval_min {
            return Err(Error::InvalidArgument {
                reason: "a schedule's interval is below schedule_interval_min",
            });
        }
        if interval > self.interval_max {
            return Err(Error::InvalidArgument {
                reason: "a schedule's interval is above schedule_interval_max",
            });
        }
        Ok(interval.as_millis() as u64)
    }
}

/// The store-wide bounds on queues.
pub(crate) struct QueueLimits {
    pub(crate) jobs_max: usize,
    pub(crate) bytes_max: usize,
    pub(crate) payload_bytes_max: usize,
    pub(crate) ttl_max: Duration,
}

impl QueueLimits {
    pub(crate) fn of(config: &StoreConfig) -> Self {
        QueueLimits {
            jobs_max: config.queue_jobs_max,
            bytes_max: config.queue_bytes_max,
            payload_bytes_max: config.job_payload_bytes_max,
            ttl_max: config.ttl_max,
        }
    }

    /// A new queue's settings against these bounds (every engine's one
    /// rule; the visibility's TTL range is the engine's to check).
    pub(crate) fn check(&self, config: &QueueConfig) -> Result<()> {
        let invalid = |reason| Err(Error::InvalidArgument { reason });
        if config.jobs_max == 0 || config.bytes_max == 0 {
            return invalid("a queue's jobs_max and bytes_max must be positive");
        }
        if config.jobs_max > self.jobs_max {
            return invalid("a queue's jobs_max is above queue_jobs_max");
        }
        if config.bytes_max > self.bytes_max {
            return invalid("a queue's bytes_max is above queue_bytes_max");
        }
        let dead = config.dead_letters_cap();
        if dead == 0 || dead > config.jobs_max {
            return invalid("a queue's dead_letters_max must be between 1 and its jobs_max");
        }
        if config.attempts_max == 0 {
            return invalid("a queue's attempts_max must be positive");
        }
        if config.visibility.is_zero() {
            return invalid("a queue's visibility must be positive");
        }
        if config.backoff.base > config.backoff.max {
            return invalid("a queue's backoff base must be at most its max");
        }
        if config.backoff.max > self.ttl_max {
            return invalid("a queue's backoff max is above ttl_max");
        }
        Ok(())
    }

    /// A job's payload and options at wall-clock time `wall_now`:
    /// `InvalidArgument` for a payload over `job_payload_bytes_max`, a
    /// delay over `ttl_max`, a `run_at` more than `ttl_max` away or given
    /// with a delay, an `attempts_max` of zero, or a priority above
    /// [`PRIORITY_MAX`].
    pub(crate) fn check_job(
        &self,
        payload: usize,
        options: &JobOptions,
        wall_now: SystemTime,
    ) -> Result<()> {
        if payload > self.payload_bytes_max {
            return Err(Error::InvalidArgument {
                reason: "payload is larger than job_payload_bytes_max",
            });
        }
        if options.run_at.is_some() && !options.delay.is_zero() {
            return Err(Error::InvalidArgument {
                reason: "a job's run_at and delay are exclusive",
            });
        }
        if options.delay > self.ttl_max {
            return Err(Error::InvalidArgument {
                reason: "a job's delay is above ttl_max",
            });
        }
        if options.delay_from(wall_now) > self.ttl_max {
            return Err(Error::InvalidArgument {
                reason: "a job's run_at is more than ttl_max away",
            });
        }
        if options.attempts_max == Some(0) {
            return Err(Error::InvalidArgument {
                reason: "a job's attempts_max must be positive",
            });
        }
        if options.priority > PRIORITY_MAX {
            return Err(Error::InvalidArgument {
                reason: "a job's priority is above PRIORITY_MAX",
            });
        }
        Ok(())
    }
}

/// The store-wide bounds on streams.
pub(crate) struct StreamLimits {
    pub(crate) entries_max: usize,
    pub(crate) bytes_max: usize,
    pub(crate) payload_bytes_max: usize,
    pub(crate) consumers_max: usize,
}

impl StreamLimits {
    pub(crate) fn of(config: &StoreConfig) -> Self {
        StreamLimits {
            entries_max: config.stream_entries_max,
            bytes_max: config.stream_bytes_max,
            payload_bytes_max: config.stream_payload_bytes_max,
            consumers_max: config.consumers_per_stream_max,
        }
    }

    /// A new stream's retention against these bounds (every engine's one
    /// rule): `InvalidArgument` for a zero or oversized limit.
    pub(crate) fn check(&self, config: &StreamConfig) -> Result<()> {
        if config.entries_max > self.entries_max {
            return Err(Error::InvalidArgument {
                reason: "a stream's entries_max is above stream_entries_max",
            });
        }
        if config.entries_max == 0 || config.bytes_max == 0 {
            return Err(Error::InvalidArgument {
                reason: "a stream's entries_max and bytes_max must be positive",
            });
        }
        if config.bytes_max > self.bytes_max {
            return Err(Error::InvalidArgument {
                reason: "a stream's bytes_max is above stream_bytes_max",
            });
        }
        if config.age_max.is_some_and(|a| a.is_zero()) {
            return Err(Error::InvalidArgument {
                reason: "a stream's age_max must be positive",
            });
        }
        Ok(())
    }

    /// A new consumer group's settings (every engine's one rule):
    /// `pending_max` from 1 to `stream_entries_max`, `deliveries_max` at
    /// least 1 (`InvalidArgument`).
    pub(crate) fn check_group(&self, config: &GroupConfig) -> Result<()> {
        if config.pending_max == 0 || config.pending_max > self.entries_max {
            return Err(Error::InvalidArgument {
                reason: "a group's pending_max must be 1 to stream_entries_max",
            });
        }
        if config.deliveries_max == 0 {
            return Err(Error::InvalidArgument {
                reason: "a group's deliveries_max must be positive",
            });
        }
        Ok(())
    }

    /// An entry's payload against `stream_payload_bytes_max`.
    pub(crate) fn check_payload(&self, len: usize) -> Result<()> {
        if len > self.payload_bytes_max {
            return Err(Error::InvalidArgument {
                reason: "payload is larger than stream_payload_bytes_max",
            });
        }
        Ok(())
    }
}

/// What one run does with a schedule whose next grid point is `next_ms`
/// at `now_ms` (both in milliseconds of one clock), when its target queue
/// has room for `room` more jobs: the grid points passed, how many fire
/// (at most `catch_up_max` and at most `room`; the rest are skipped), and
/// the grid point it moves to, the first after `now_ms`. Nothing is due
/// before `next_ms`; a due schedule whose queue has no room does not move
/// (it is refused, and due again at the next run).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CatchUp {
    /// Grid points passed (`0` when not yet due).
    pub(crate) due: u64,
    /// Jobs to enqueue: `min(due, catch_up_max, room)`.
    pub(crate) fires: u64,
    /// The next grid point once the fires are in (`next_ms` itself when
    /// nothing fires).
    pub(crate) next_ms: u64,
}

impl CatchUp {
    /// Grid points passed that will never fire.
    pub(crate) fn skipped(&self) -> u64 {
        if self.fires == 0 {
            0
        } else {
            self.due - self.fires
        }
    }
}

/// The schedule grid's catch-up step (every engine's one formula; the Lua
/// library's `catch_up` is pinned to it by the rules probe).
pub(crate) fn catch_up(
    next_ms: u64,
    now_ms: u64,
    interval_ms: u64,
    catch_up_max: u64,
    room: u64,
) -> CatchUp {
    if now_ms < next_ms {
        return CatchUp {
            due: 0,
            fires: 0,
            next_ms,
        };
    }
    let due = (now_ms - next_ms) / interval_ms + 1;
    let fires = due.min(catch_up_max).min(room);
    CatchUp {
        due,
        fires,
        next_ms: if fires == 0 {
            next_ms
        } else {
            next_ms.saturating_add(due.saturating_mul(interval_ms))
        },
    }
}

/// The claim-validity rule of every claim operation (ack, fail, a staged
/// ack): a job claimed with `held`, whose claim lapses at `lapses_ms`, is
/// acted on with `token` at `now_ms` only while the claim is live and the
/// token is that claim's.
pub(crate) fn claim_live(held: u64, lapses_ms: u64, token: u64, now_ms: u64) -> bool {
    held == token && now_ms < lapses_ms
}

/// The TTLs a collection accepts, in whole milliseconds, and the one place
/// that turns a TTL into a deadline.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TtlRange {
    min_ms: u64,
    max_ms: u64,
}

impl TtlRange {
    /// `min..=max`; refused unless `0 < min <= max` and `max` fits the
    /// clock range.
    pub(crate) fn new(min: std::time::Duration, max: std::time::Duration) -> Result<Self, Error> {
        let (min_ms, max_ms) = (duration_to_millis_ceil(min), duration_to_millis_ceil(max));
        if min.is_zero() || min > max || max_ms > DEADLINE_MAX_MS {
            return Err(Error::InvalidArgument {
                reason: "the ttl range must be positive, ordered and within the clock range",
            });
        }
        Ok(TtlRange { min_ms, max_ms })
    }

    /// Validates `ttl` (rounded up to whole milliseconds; never clamped)
    /// and returns the deadline `now + ttl`.
    pub(crate) fn deadline(&self, now: MonoTime, ttl: std::time::Duration) -> Result<u64, Error> {
        if ttl.is_zero() {
            return Err(Error::InvalidArgument {
                reason: "ttl must be positive",
            });
        }
        let ms = duration_to_millis_ceil(ttl);
        if ms < self.min_ms {
            return Err(Error::InvalidArgument {
                reason: "ttl is below the configured minimum",
            });
        }
        if ms > self.max_ms {
            return Err(Error::InvalidArgument {
                reason: "ttl is above the configured maximum",
            });
        }
        now.as_millis()
            .checked_add(ms)
            .filter(|&d| d <= DEADLINE_MAX_MS)
            .ok_or(Error::InvalidArgument {
                reason: "deadline is beyond the clock's range",
            })
    }
}

/// The formulas' tables: inputs and the one right answer, run against the
/// Rust functions here and against the Redis engine's Lua library by
/// `tests/redis_rules.rs`, so neither can drift from the other.
#[cfg(any(test, feature = "conformance"))]
pub mod tables {
    /// One row of [`CATCH_UP`]: eight numbers, in ms or counts.
    pub type CatchUpRow = (u64, u64, u64, u64, u64, u64, u64, u64);

    /// `catch_up` (above): (next grid point, now, interval, catch-up
    /// max, the queue's room; grid points due, fires, next grid point
    /// after), in ms.
    pub const CATCH_UP: &[CatchUpRow] = &[
        (1_000, 999, 100, 64, 100, 0, 0, 1_000),
        (1_000, 1_000, 100, 64, 100, 1, 1, 1_100),
        (1_000, 1_099, 100, 64, 100, 1, 1, 1_100),
        (1_000, 1_100, 100, 64, 100, 2, 2, 1_200),
        (1_000, 10_900, 100, 64, 100, 100, 64, 11_000),
        (0, 5, 1, 64, 100, 6, 6, 6),
        (500, 10_000_500, 1_000, 64, 100, 10_001, 64, 10_001_500),
        (500, 10_000_500, 1_000, 1, 100, 10_001, 1, 10_001_500),
        // The queue's room bounds the fires; the grid still moves.
        (1_000, 1_450, 100, 64, 3, 5, 3, 1_500),
        (1_000, 10_900, 100, 64, 8, 100, 8, 11_000),
        // No room: nothing fires, and the schedule stays due.
        (1_000, 1_450, 100, 64, 0, 5, 0, 1_000),
        // Not due: the room does not matter.
        (1_000, 999, 100, 64, 0, 0, 0, 1_000),
    ];

    /// `claim_live` (above): (the claim's token, when it lapses,
    /// the token presented, now; live).
    pub const CLAIM_LIVE: &[(u64, u64, u64, u64, bool)] = &[
        (7, 1_000, 7, 999, true),
        (7, 1_000, 7, 0, true),
        (7, 1_000, 7, 1_000, false),
        (7, 1_000, 7, 1_001, false),
        (7, 1_000, 8, 999, false),
        (u64::MAX, 1_000, u64::MAX - 1, 1, false),
    ];

    /// [`Backoff::delay`](crate::queue::Backoff::delay): (base, max, attempt,
    /// draw; delay), in ms. Draws stay below 2^32, as the engines' are.
    pub const BACKOFF: &[(u64, u64, u32, u64, u64)] = &[
        (1_000, 60_000, 1, 0, 500),
        (1_000, 60_000, 1, 500, 1_000),
        (1_000, 60_000, 1, 501, 500),
        (1_000, 60_000, 3, 12_345, 2_339),
        (1_000, 60_000, 10, 7, 30_007),
        (1_000, 60_000, 200, 4_294_967_295, 54_135),
        (3, 7, 1, 1, 2),
        (0, 0, 5, 9, 0),
        (5_000, 300_000, 64, 1, 150_001),
    ];
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_accepts_units_from_largest_to_smallest() {
        let ms = |s| parse_every(s).map(|d| d.as_millis() as u64);
        assert_eq!(ms("@every 30s"), Ok(30_000));
        assert_eq!(ms("@every 1h30m"), Ok(5_400_000));
        assert_eq!(ms("@every 1d2h3m4s5ms"), Ok(93_784_005));
        assert_eq!(ms("@every 250ms"), Ok(250));
        for bad in [
            "30s",
            "@every",
            "@every ",
            "@every 30",
            "@every s",
            "@every 30x",
            "@every 30m1h",
            "@every 1s1s",
            "@every 0s",
            "@every 1s ",
            "@every 99999999999999999999s",
            "@every 999999999999999d",
            "@every -1s",
        ] {
            assert!(
                matches!(parse_every(bad), Err(Error::InvalidArgument { .. })),
                "{bad:?} was accepted"
            );
        }
    }

    /// The tables the rules probe also runs on the Redis engine
    /// (`tests/redis_rules.rs`): one reference for both engines.
    #[test]
    fn the_formulas_agree_with_their_tables() {
        for &(next, now, interval, max, room, due, fires, to) in
            crate::contract::rules::tables::CATCH_UP
        {
            assert_eq!(
                catch_up(next, now, interval, max, room),
                CatchUp {
                    due,
                    fires,
                    next_ms: to
                },
                "catch_up({next}, {now}, {interval}, {max}, {room})"
            );
        }
        for &(held, lapses, token, now, live) in crate::contract::rules::tables::CLAIM_LIVE {
            assert_eq!(
                claim_live(held, lapses, token, now),
                live,
                "claim_live({held}, {lapses}, {token}, {now})"
            );
        }
        for &(base, max, attempt, draw, delay) in crate::contract::rules::tables::BACKOFF {
            let backoff = crate::contract::queue::Backoff {
                base: Duration::from_millis(base),
                max: Duration::from_millis(max),
            };
            assert_eq!(
                backoff.delay(attempt, draw),
                Duration::from_millis(delay),
                "delay({base}, {max}, {attempt}, {draw})"
            );
        }
    }

    #[test]
    fn the_argument_checks_name_their_limit() {
        let config = StoreConfig {
            page_len_max: 10,
            drain_window_max: Duration::from_secs(5),
            ..StoreConfig::default()
        };
        for (limit, ok) in [(0, false), (1, true), (10, true), (11, false)] {
            assert_eq!(
                config.check_page_limit(limit).is_ok(),
                ok,
                "page limit {limit}"
            );
        }
        for (asked, batch) in [(1, Ok(1)), (10, Ok(10)), (500, Ok(10))] {
            assert_eq!(config.claim_batch(asked), batch, "claim batch {asked}");
        }
        assert!(matches!(
            config.claim_batch(0),
            Err(Error::InvalidArgument { .. })
        ));
        assert_eq!(config.page_cap(3), 3);
        assert_eq!(config.page_cap(30), 10);
        assert!(config.check_drain_window(Duration::from_secs(5)).is_ok());
        assert!(matches!(
            config.check_drain_window(Duration::from_millis(5_001)),
            Err(Error::InvalidArgument { reason }) if reason.contains("drain_window_max")
        ));
    }

    #[test]
    fn a_notify_takes_an_own_channel_and_a_bounded_payload() {
        let config = StoreConfig::default()
            .name_bytes_max(8)
            .wake_payload_bytes_max(4);
        let long = "x".repeat(9);
        for (channel, payload, want) in [
            ("lobby", &b""[..], Ok(())),
            ("lobby", b"abcd", Ok(())),
            ("lobby", b"abcde", Err("payload")),
            ("", b"", Err("name")),
            ("__own", b"", Err("reserved")),
            (long.as_str(), b"", Err("long")),
        ] {
            let got = config.check_notify(channel, payload);
            let fits = match (&got, want) {
                (Ok(()), Ok(())) => true,
                (Err(Error::InvalidArgument { reason }), Err("payload")) => {
                    reason.contains("wake_payload_bytes_max")
                }
                (Err(Error::InvalidArgument { reason }), Err("long")) => {
                    reason.contains("name_bytes_max")
                }
                (Err(Error::InvalidName), Err("name")) => true,
                (Err(Error::ReservedName), Err("reserved")) => true,
                _ => false,
            };
            assert!(fits, "{channel:?} {payload:?}: {got:?}, want {want:?}");
        }
        let none = StoreConfig::default().wake_payload_bytes_max(0);
        assert!(none.check_notify("lobby", b"").is_ok());
        assert!(none.check_notify("lobby", b"a").is_err());
    }

    #[test]
    fn a_job_is_checked_field_by_field() {
        let config = StoreConfig::default()
            .job_payload_bytes_max(4)
            .ttl_max(Duration::from_secs(60));
        let limits = QueueLimits::of(&config);
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let minute = Duration::from_secs(60);
        let ok = JobOptions::default();
        for (payload, options, want) in [
            (4, ok.clone(), None),
            (5, ok.clone(), Some("job_payload_bytes_max")),
            (0, JobOptions::delayed(minute), None),
            (
                0,
                JobOptions::delayed(minute * 2),
                Some("delay is above ttl_max"),
            ),
            (0, JobOptions::at(now + minute), None),
            (
                0,
                JobOptions::at(now + minute * 2),
                Some("more than ttl_max away"),
            ),
            (0, JobOptions::at(now).with_attempts_max(1), None),
            (
                0,
                JobOptions {
                    delay: minute,
                    ..JobOptions::at(now)
                },
                Some("exclusive"),
            ),
            (0, ok.clone().with_attempts_max(0), Some("attempts_max")),
            (0, ok.clone().with_priority(PRIORITY_MAX), None),
            (
                0,
                ok.clone().with_priority(PRIORITY_MAX + 1),
                Some("PRIORITY_MAX"),
            ),
        ] {
            let got = limits.check_job(payload, &options, now);
            match (want, &got) {
                (None, Ok(())) => {}
                (Some(part), Err(Error::InvalidArgument { reason })) if reason.contains(part) => {}
                _ => panic!("{payload} {options:?}: {got:?}, want {want:?}"),
            }
        }
    }
}
