//! The operations a model-based run is made of, their outcomes as the
//! comparison sees them, and the decoder that turns fuzz bytes into them.

#![allow(dead_code)]

use relaystore::Error;

/// One operation. Indexes (`lease`, `attempt`, `fence`) pick among what was
/// created so far, modulo its length; keys and names come from small sets.
#[derive(Clone, Debug)]
pub enum Op {
    Grant {
        tenant: u8,
        ttl_ms: u64,
    },
    Renew {
        tenant: u8,
        lease: usize,
        ttl_ms: u64,
    },
    Revoke {
        tenant: u8,
        lease: usize,
    },
    GetLease {
        tenant: u8,
        lease: usize,
    },
    Publish {
        tenant: u8,
        lease: usize,
        key: u8,
    },
    GetListing {
        tenant: u8,
        key: u8,
    },
    Unpublish {
        tenant: u8,
        key: u8,
    },
    BeginJoin {
        tenant: u8,
        key: u8,
        ttl_ms: u64,
    },
    Bind {
        tenant: u8,
        attempt: usize,
        port: u8,
    },
    Consume {
        tenant: u8,
        attempt: usize,
    },
    Cancel {
        tenant: u8,
        attempt: usize,
    },
    Heartbeat {
        tenant: u8,
        member: u8,
        ttl_ms: u64,
    },
    GetPresence {
        tenant: u8,
        member: u8,
    },
    Leave {
        tenant: u8,
        member: u8,
    },
    TryLock {
        tenant: u8,
        name: u8,
        ttl_ms: u64,
    },
    Release {
        tenant: u8,
        name: u8,
        fence: usize,
    },
    GetLock {
        tenant: u8,
        name: u8,
    },
    /// A stream (`s0`/`s1`), unattached or attached to a lease, refusing
    /// or trimming when full, with or without an age limit.
    CreateStream {
        tenant: u8,
        stream: u8,
        attached: bool,
        lease: usize,
        trim: bool,
        aged: bool,
    },
    Append {
        tenant: u8,
        stream: u8,
    },
    ReadStream {
        tenant: u8,
        stream: u8,
        from: u8,
    },
    /// Commits consumer `c0`..`c2`'s offset (a stream takes at most
    /// `STREAM_CONSUMERS` of them).
    CommitStream {
        tenant: u8,
        stream: u8,
        consumer: u8,
        offset: u8,
    },
    DeleteStream {
        tenant: u8,
        stream: u8,
    },
    /// What the stream holds.
    StreamInfo {
        tenant: u8,
        stream: u8,
    },
    /// Drops the stream's entries below `before`; answers the first
    /// offset held after it.
    TrimStream {
        tenant: u8,
        stream: u8,
        before: u8,
    },
    /// Creates group `g0`/`g1` on the stream, from its oldest entry or
    /// its end.
    CreateGroup {
        tenant: u8,
        stream: u8,
        group: u8,
        end: bool,
    },
    /// Member `m0`/`m1` reads up to two new entries of the group.
    ReadGroup {
        tenant: u8,
        stream: u8,
        group: u8,
        member: u8,
    },
    /// Acknowledges `offset` in the group.
    AckGroup {
        tenant: u8,
        stream: u8,
        group: u8,
        offset: u8,
    },
    /// Member `m0`/`m1` takes over up to two entries idle for
    /// `GROUP_IDLE_MS`.
    ClaimIdle {
        tenant: u8,
        stream: u8,
        group: u8,
        member: u8,
    },
    /// The group's position, pending and dead entries.
    GroupInfo {
        tenant: u8,
        stream: u8,
        group: u8,
    },
    /// A transaction of `ops` (publishes, unpublishes, appends, consumer
    /// commits, trims, notifies, enqueues, settles, schedules and unschedules,
    /// in any tenant), committed or dropped.
    Tx {
        ops: Vec<Op>,
        commit: bool,
    },
    /// Attaches a new listener to wake channel `c0`/`c1`.
    Listen {
        tenant: u8,
        channel: u8,
    },
    Notify {
        tenant: u8,
        channel: u8,
    },
    /// Takes a listener's pending wake, if any, without waiting.
    TryRecv {
        listener: usize,
    },
    /// Enqueues a job on the tenant's queue `q`, ready or delayed by
    /// `QUEUE_DELAY_MS`, with an empty payload or one of `QUEUE_BIG_BYTES`,
    /// at priority 0 or (`low`) `PRIORITY_MAX`.
    Enqueue {
        tenant: u8,
        delayed: bool,
        big: bool,
        low: bool,
    },
    /// Claims one job for the queue's visibility or `QUEUE_SHORT_MS`.
    Claim {
        tenant: u8,
        short: bool,
    },
    /// Acks (or fails) the job of claim number `claim`.
    Settle {
        tenant: u8,
        claim: usize,
        ack: bool,
    },
    /// Enqueues `n` jobs in one batch, all or none.
    EnqueueBatch {
        tenant: u8,
        n: u8,
        delayed: bool,
        big: bool,
        low: bool,
    },
    /// Extends claim `claim` by the queue's visibility.
    ExtendClaim {
        tenant: u8,
        claim: usize,
    },
    /// Puts claim `claim`'s job back (at once or after `QUEUE_DELAY_MS`)
    /// without using an attempt.
    Snooze {
        tenant: u8,
        claim: usize,
        delayed: bool,
    },
    /// Cancels job `job` whatever its state.
    CancelJob {
        tenant: u8,
        job: usize,
    },
    PurgeDead {
        tenant: u8,
    },
    /// What the tenant's queue holds, by state.
    QueueInfo {
        tenant: u8,
    },
    /// Job number `job` (by enqueue order) as the tenant sees it.
    Job {
        tenant: u8,
        job: usize,
    },
    /// The tenant's dead letters.
    DeadLetters {
        tenant: u8,
    },
    /// Returns dead letter `job` (by enqueue order) to ready.
    RequeueDead {
        tenant: u8,
        job: usize,
    },
    /// Schedules `n0`..`n2` on the tenant's queue, every
    /// `SCHEDULE_FAST_MS` or `SCHEDULE_SLOW_MS` (replacing one of the
    /// name). Schedules never fire here: no runner leads them.
    Schedule {
        tenant: u8,
        name: u8,
        slow: bool,
    },
    Unschedule {
        tenant: u8,
        name: u8,
    },
    /// The tenant's schedules.
    ListSchedules {
        tenant: u8,
    },
    Advance {
        ms: u64,
    },
    Sweep,
}

/// The shape of an outcome: which error, or that it succeeded (with the
/// parts of a success the model can predict).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    Ok,
    Locked(bool),
    /// An append's offset.
    Offset(u64),
    /// A read: how many entries, and the offset to read from next.
    Read {
        entries: usize,
        next: u64,
    },
    /// Whether a listener had a wake.
    Woke(bool),
    /// A claim: the job (by enqueue order) and its attempt, if one was
    /// ready.
    Claimed(Option<(usize, u32)>),
    /// A failure: the retry's backoff in ms, or `None` for a dead letter.
    Failed(Option<u64>),
    /// How many (dead letters purged).
    Count(usize),
    /// A tenant's schedules by name: the name and the time to its next
    /// fire in ms.
    Schedules(Vec<(u8, u64)>),
    /// A stream's first and next offsets, entries, payload bytes and
    /// consumers.
    Stream([u64; 5]),
    /// A group read: each entry's offset and deliveries, and the offsets
    /// passed over.
    GroupRead(Vec<(u64, u32)>, u64),
    /// An idle claim: the entries delivered (offset, deliveries), the
    /// entries buried and those trimmed away.
    GroupClaim(Vec<(u64, u32)>, Vec<u64>, Vec<u64>),
    /// A group's position, pending and dead entries.
    Group([u64; 3]),
    /// A queue's ready, delayed, claimed and dead jobs and payload bytes.
    Queue([usize; 5]),
    /// A job: its state (`r`eady, `d`elayed, `c`laimed, dead by a
    /// `l`apse or a `f`ailure), the time left in its state in ms
    /// (delayed, claimed; else 0), and its attempts.
    Job(char, u64, u32),
    /// Jobs by enqueue order (dead letters, oldest first).
    Jobs(Vec<usize>),
    /// A transaction: which stagings were taken, the offsets its appends
    /// got, whether its commit went in (`None`: dropped), and how its
    /// failures went (backoff in ms, or `None` for a dead letter).
    Tx {
        staged: Vec<bool>,
        offsets: Vec<u64>,
        committed: Option<bool>,
        failed: Vec<Option<u64>>,
    },
    Err(Kind),
}

/// An error with its data reduced to what the model can know.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    NotFound,
    Expired,
    Revoked,
    Conflict,
    ReplayRejected,
    Capacity(String),
    ServiceUnavailable(relaystore::Unavailable),
    InvalidArgument,
    Trimmed(u64),
    Exists,
    StaleClaim,
    Other(String),
}

pub fn kind(e: &Error) -> Kind {
    match e {
        Error::NotFound => Kind::NotFound,
        Error::Expired => Kind::Expired,
        Error::Revoked => Kind::Revoked,
        Error::Conflict { .. } => Kind::Conflict,
        Error::ReplayRejected => Kind::ReplayRejected,
        Error::CapacityExceeded { scope, .. } => Kind::Capacity(scope.to_string()),
        Error::ServiceUnavailable { reason } => Kind::ServiceUnavailable(*reason),
        Error::InvalidArgument { .. } => Kind::InvalidArgument,
        Error::Trimmed { first } => Kind::Trimmed(*first),
        Error::Exists => Kind::Exists,
        Error::StaleClaim => Kind::StaleClaim,
        other => Kind::Other(other.to_string()),
    }
}

pub fn outcome<T>(r: &Result<T, Error>) -> Outcome {
    match r {
        Ok(_) => Outcome::Ok,
        Err(e) => Outcome::Err(kind(e)),
    }
}

pub fn port_of(op: &Op) -> u8 {
    match op {
        Op::Bind { port, .. } => *port,
        _ => 0,
    }
}

/// Decodes arbitrary bytes into operations (for fuzzing): three bytes per
/// op. A transaction's three bytes say how many of the ops after it (one
/// to four) it stages, of those a transaction can stage, and whether it
/// commits.
pub fn decode(bytes: &[u8]) -> Vec<Op> {
    let chunks: Vec<&[u8]> = bytes.chunks(3).filter(|c| c.len() == 3).collect();
    let mut ops = Vec::new();
    let mut i = 0;
    while i < chunks.len() {
        let c = chunks[i];
        i += 1;
        if c[0] % 61 == 60 {
            let n = 1 + usize::from(c[2] % 4);
            let staged = chunks[i..(i + n).min(chunks.len())]
                .iter()
                .map(|c| decode_one(c))
                .filter(|op| {
                    matches!(
                        op,
                        Op::Publish { .. }
                            | Op::Unpublish { .. }
                            | Op::Append { .. }
                            | Op::CommitStream { .. }
                            | Op::TrimStream { .. }
                            | Op::Notify { .. }
                            | Op::Enqueue { .. }
                            | Op::Settle { .. }
                            | Op::Schedule { .. }
                            | Op::Unschedule { .. }
                    )
                })
                .collect();
            i += n;
            ops.push(Op::Tx {
                ops: staged,
                commit: c[1] & 3 != 0,
            });
        } else {
            ops.push(decode_one(c));
        }
    }
    ops
}

/// One op from three bytes.
fn decode_one(c: &[u8]) -> Op {
    let (a, b, x) = (c[0], c[1], c[2]);
    // Mostly tenant 0, so ids usually meet their own tenant.
    let tenant = u8::from(b & 7 == 7);
    let small = (b >> 1) & 1;
    let idx = usize::from(x);
    let ttl_ms = match x % 16 {
        0 => 5,
        1 => 70_000,
        n => 10 + u64::from(n) * 2_000,
    };
    // Weighted toward the grant -> publish -> join -> bind -> consume
    // chain, which needs several steps to line up.
    const KINDS: [u8; 59] = [
        0, 0, 0, 1, 1, 2, 3, 4, 4, 4, 5, 6, 7, 7, 7, 7, 8, 8, 8, 9, 9, 9, 10, 11, 12, 13, 14, 15,
        16, 17, 18, 19, 20, 20, 21, 21, 21, 21, 21, 21, 22, 22, 23, 23, 24, 25, 25, 26, 27, 27, 27,
        27, 27, 27, 28, 28, 28, 29, 29,
    ];
    let stream = small;
    match KINDS[usize::from(a) % KINDS.len()] {
        20 => Op::CreateStream {
            tenant,
            stream,
            attached: x & 1 == 1,
            lease: idx,
            trim: x & 2 == 2,
            aged: x & 4 == 4,
        },
        21 => Op::Append { tenant, stream },
        22 => Op::ReadStream {
            tenant,
            stream,
            from: x % 6,
        },
        23 => Op::CommitStream {
            tenant,
            stream,
            consumer: (x >> 4) % 3,
            offset: x % 6,
        },
        24 if x % 3 == 1 => Op::StreamInfo { tenant, stream },
        24 if x % 3 == 0 => Op::TrimStream {
            tenant,
            stream,
            before: (x >> 2) % 6,
        },
        24 => Op::DeleteStream { tenant, stream },
        25 => match x % 3 {
            0 => Op::Listen {
                tenant,
                channel: small,
            },
            1 => Op::Notify {
                tenant,
                channel: small,
            },
            _ => Op::TryRecv {
                listener: usize::from(x),
            },
        },
        26 => Op::Sweep,
        0 => Op::Grant { tenant, ttl_ms },
        1 => Op::Renew {
            tenant,
            lease: idx,
            ttl_ms,
        },
        2 => Op::Revoke { tenant, lease: idx },
        3 => Op::GetLease { tenant, lease: idx },
        4 => Op::Publish {
            tenant,
            lease: idx,
            key: small,
        },
        5 => Op::GetListing { tenant, key: small },
        6 => Op::Unpublish { tenant, key: small },
        7 => Op::BeginJoin {
            tenant,
            key: small,
            ttl_ms,
        },
        8 => Op::Bind {
            tenant,
            attempt: idx,
            port: small,
        },
        9 => Op::Consume {
            tenant,
            attempt: idx,
        },
        10 => Op::Cancel {
            tenant,
            attempt: idx,
        },
        11 => Op::Heartbeat {
            tenant,
            member: small,
            ttl_ms,
        },
        12 => Op::GetPresence {
            tenant,
            member: small,
        },
        13 => Op::Leave {
            tenant,
            member: small,
        },
        14 => Op::TryLock {
            tenant,
            name: small,
            ttl_ms,
        },
        15 => Op::Release {
            tenant,
            name: small,
            fence: idx,
        },
        16 => Op::GetLock {
            tenant,
            name: small,
        },
        27 => match x % 8 {
            0..=2 => Op::Enqueue {
                tenant,
                delayed: x & 16 == 16,
                big: x & 32 == 32,
                low: x & 64 == 64,
            },
            3..=4 => Op::Claim {
                tenant,
                short: x & 16 == 16,
            },
            5..=6 => Op::Settle {
                tenant,
                claim: idx,
                ack: x & 16 == 16,
            },
            _ => Op::PurgeDead { tenant },
        },
        29 => match x % 4 {
            0 => Op::QueueInfo { tenant },
            1 => Op::Job { tenant, job: idx },
            2 => Op::DeadLetters { tenant },
            _ => Op::RequeueDead { tenant, job: idx },
        },
        28 => match x % 4 {
            0 | 1 => Op::Schedule {
                tenant,
                name: (x >> 4) % 3,
                slow: x & 2 == 2,
            },
            2 => Op::Unschedule {
                tenant,
                name: (x >> 4) % 3,
            },
            _ => Op::ListSchedules { tenant },
        },
        17 => Op::Advance {
            ms: u64::from(x) * 4,
        },
        18 => Op::Advance {
            ms: u64::from(x) * 40,
        },
        _ => Op::Sweep,
    }
}
