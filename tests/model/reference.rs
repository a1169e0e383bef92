//! The reference model: the contract written with plain maps, sequential
//! and without concurrency.

#![allow(dead_code)]

use super::ops::*;
use super::*;
use std::collections::HashMap;

#[derive(Clone)]
pub struct LeaseM {
    tenant: u8,
    deadline: u64,
    present: bool,
}

#[derive(Clone)]
pub struct ListingM {
    lease: usize,
    instance: usize,
}

#[derive(Clone, Copy, PartialEq)]
pub enum PhaseM {
    Pending,
    Bound(u8),
    Consumed,
}

#[derive(Clone)]
pub struct AttemptM {
    tenant: u8,
    key: u8,
    instance: usize,
    deadline: u64,
    phase: PhaseM,
    present: bool,
}

#[derive(Clone)]
pub struct LockM {
    deadline: u64,
    acquisition: usize,
}

#[derive(Clone, PartialEq)]
pub struct StreamM {
    lease: Option<usize>,
    trim: bool,
    aged: bool,
    /// Each entry held, oldest first: its offset and when it was appended.
    entries: std::collections::VecDeque<(u64, u64)>,
    /// The offset the next append gets (offsets a dropped transaction
    /// took are gaps below it).
    next: u64,
    /// The lowest offset still readable.
    first: u64,
    /// Each consumer's committed offset.
    consumers: std::collections::BTreeMap<u8, u64>,
    /// Its consumer groups.
    groups: std::collections::BTreeMap<u8, GroupM>,
}

/// A consumer group: where it started, the offset its next read starts
/// at, and its pending list by offset.
#[derive(Clone, PartialEq)]
pub struct GroupM {
    end: bool,
    next: u64,
    pending: std::collections::BTreeMap<u64, PendingM>,
}

#[derive(Clone, PartialEq)]
pub struct PendingM {
    member: u8,
    deliveries: u32,
    /// The last delivery (ms).
    at: u64,
    dead: bool,
}

impl StreamM {
    fn first(&self) -> u64 {
        self.first
    }

    /// Consumers and groups: what `STREAM_CONSUMERS` counts.
    fn readers(&self) -> usize {
        self.consumers.len() + self.groups.len()
    }

    fn pop_front(&mut self) {
        if let Some((offset, _)) = self.entries.pop_front() {
            self.first = offset + 1;
        }
    }

    fn trim_aged(&mut self, now: u64) {
        if self.aged {
            while self
                .entries
                .front()
                .is_some_and(|&(_, at)| now - at >= STREAM_AGE_MS)
            {
                self.pop_front();
            }
        }
    }

    /// Appends at `offset` (taken earlier), trimming first if full.
    fn push(&mut self, offset: u64, now: u64) {
        if self.entries.len() >= STREAM_ENTRIES {
            self.pop_front();
        }
        self.entries.push_back((offset, now));
    }
}

/// A job of a tenant's queue `q`.
#[derive(Clone, Copy, PartialEq, Debug)]
pub enum JobAt {
    Ready,
    Delayed(u64),
    /// Claimed by claim number `claim` until the tick `until`.
    Claimed {
        claim: usize,
        until: u64,
    },
    Dead,
}

#[derive(Clone)]
pub struct JobM {
    tenant: u8,
    /// 0, or `PRIORITY_MAX` for a `low` enqueue.
    priority: u8,
    attempts: u32,
    at: JobAt,
    /// Acked or purged.
    gone: bool,
    /// Payload bytes.
    bytes: usize,
    /// Dead-lettered by a lapse (else by a failure), while dead.
    lapsed: bool,
}

/// Per tenant: its queue's jitter generator.
#[derive(Clone)]
pub struct QueueM {
    jitter: relaystore::queue::Jitter,
}

#[derive(Clone, Default)]
pub struct Model {
    /// The replay grace the model believes in (the store's, unless a test
    /// injects a disagreement on purpose).
    grace_ms: u64,
    now: u64,
    last_sweep: u64,
    leases: Vec<LeaseM>,
    tombstones: HashMap<usize, u64>,
    listings: HashMap<(u8, u8), ListingM>,
    instances: usize,
    attempts: Vec<AttemptM>,
    presence: HashMap<(u8, u8), u64>,
    locks: HashMap<(u8, u8), LockM>,
    acquisitions: usize,
    streams: HashMap<(u8, u8), StreamM>,
    /// Per listener: its tenant, channel, and how many wakes it has
    /// queued (at most `WAKE_QUEUE`: one per notify, the oldest dropped).
    listeners: Vec<(u8, u8, usize)>,
    /// Jobs by enqueue order; claims by claim order (their job).
    jobs: Vec<JobM>,
    claims: Vec<usize>,
    queues: HashMap<u8, QueueM>,
    /// Schedules by tenant and name: their interval and next fire, in ms.
    schedules: std::collections::BTreeMap<(u8, u8), (u64, u64)>,
}

pub fn ttl_ok(ttl_ms: u64) -> bool {
    (TTL_MIN_MS..=TTL_MAX_MS).contains(&ttl_ms)
}

pub const INVALID: Outcome = Outcome::Err(Kind::InvalidArgument);

impl Model {
    /// An empty model whose replay grace is `grace_ms`.
    pub fn with_grace(grace_ms: u64) -> Self {
        Model {
            grace_ms,
            ..Model::default()
        }
    }

    fn lease_status(&self, tenant: u8, lease: usize) -> Result<(), Kind> {
        match self.leases.get(lease) {
            Some(l) if l.tenant == tenant && l.present => {
                if self.now < l.deadline {
                    Ok(())
                } else {
                    Err(Kind::Expired)
                }
            }
            Some(l)
                if l.tenant == tenant
                    && self.tombstones.get(&lease).is_some_and(|&d| self.now < d) =>
            {
                Err(Kind::Revoked)
            }
            _ => Err(Kind::NotFound),
        }
    }

    fn listing_visible(&self, tenant: u8, key: u8) -> Option<&ListingM> {
        self.listings
            .get(&(tenant, key))
            .filter(|l| self.lease_status(tenant, l.lease).is_ok())
    }

    /// The stream as of now (entries past its age gone), if it is there
    /// and its lease (if any) is visible. One whose lease is not is as
    /// good as gone: its name is free again.
    fn stream(&mut self, tenant: u8, stream: u8) -> Option<&mut StreamM> {
        let lease = self.streams.get(&(tenant, stream))?.lease;
        if lease.is_some_and(|l| self.lease_status(tenant, l).is_err()) {
            self.streams.remove(&(tenant, stream));
            return None;
        }
        let now = self.now;
        let s = self.streams.get_mut(&(tenant, stream))?;
        s.trim_aged(now);
        Some(s)
    }

    /// Group `group` of the stream as of now, with the stream's first
    /// offset and the offsets it holds; `NotFound` if either is missing.
    fn group(
        &mut self,
        tenant: u8,
        stream: u8,
        group: u8,
    ) -> Result<(u64, Vec<u64>, &mut GroupM), Kind> {
        let s = self.stream(tenant, stream).ok_or(Kind::NotFound)?;
        let first = s.first();
        let held = s.entries.iter().map(|&(o, _)| o).collect();
        let g = s.groups.get_mut(&group).ok_or(Kind::NotFound)?;
        Ok((first, held, g))
    }

    /// Moves what is due in the tenant's queue at `now`: delays end, and
    /// lapsed claims return their job (or dead-letter it after its last
    /// attempt). Every queue op starts with it: each sees the queue as of
    /// now.
    fn settle_queue(&mut self, tenant: u8) {
        let now = self.now;
        for job in self
            .jobs
            .iter_mut()
            .filter(|j| j.tenant == tenant && !j.gone)
        {
            job.at = match job.at {
                JobAt::Delayed(due) if due <= now => JobAt::Ready,
                JobAt::Claimed { until, .. } if until <= now => {
                    if job.attempts >= QUEUE_ATTEMPTS {
                        job.lapsed = true;
                        JobAt::Dead
                    } else {
                        JobAt::Ready
                    }
                }
                other => other,
            };
        }
    }

    /// Enqueues `n` jobs at once, all or none, under the queue's caps
    /// (dead letters, then jobs, then bytes).
    fn enqueue(&mut self, tenant: u8, n: usize, delayed: bool, big: bool, low: bool) -> Outcome {
        self.settle_queue(tenant);
        let dead = self
            .queue_jobs(tenant)
            .filter(|j| j.at == JobAt::Dead)
            .count();
        if dead >= QUEUE_DEAD {
            return Outcome::Err(Kind::Capacity(
                relaystore::Scope::QueueDeadLetters.to_string(),
            ));
        }
        if self.queue_jobs(tenant).count() + n > QUEUE_JOBS {
            return Outcome::Err(Kind::Capacity(relaystore::Scope::QueueJobs.to_string()));
        }
        let bytes = if big { QUEUE_BIG_BYTES } else { 0 };
        let held: usize = self.queue_jobs(tenant).map(|j| j.bytes).sum();
        if held + n * bytes > queue_config().bytes_max {
            return Outcome::Err(Kind::Capacity(relaystore::Scope::QueueBytes.to_string()));
        }
        let at = if delayed {
            JobAt::Delayed(self.now + QUEUE_DELAY_MS)
        } else {
            JobAt::Ready
        };
        for _ in 0..n {
            self.jobs.push(JobM {
                tenant,
                priority: if low { PRIORITY_MAX } else { 0 },
                attempts: 0,
                at,
                gone: false,
                bytes,
                lapsed: false,
            });
        }
        Outcome::Ok
    }

    /// The job claim `claim` holds live now (the queue settled first):
    /// `NotFound` once the job is gone or another tenant's, `StaleClaim`
    /// if the claim lapsed or was superseded.
    fn live_claim(&mut self, tenant: u8, claim: usize) -> Result<usize, Kind> {
        self.settle_queue(tenant);
        let i = self.claims[claim];
        let job = &self.jobs[i];
        if job.tenant != tenant || job.gone {
            return Err(Kind::NotFound);
        }
        let now = self.now;
        match job.at {
            JobAt::Claimed { claim: c, until } if c == claim && now < until => Ok(i),
            _ => Err(Kind::StaleClaim),
        }
    }

    fn queue_jobs(&self, tenant: u8) -> impl Iterator<Item = &JobM> {
        self.jobs
            .iter()
            .filter(move |j| j.tenant == tenant && !j.gone)
    }

    fn stalled(&self) -> bool {
        self.now - self.last_sweep > STALL_MS
    }

    fn remove_listing(&mut self, tenant: u8, key: u8) {
        if let Some(l) = self.listings.remove(&(tenant, key)) {
            for a in &mut self.attempts {
                if a.present && a.instance == l.instance && a.phase != PhaseM::Consumed {
                    a.present = false;
                }
            }
        }
    }

    fn remove_lease(&mut self, lease: usize) {
        self.leases[lease].present = false;
        let tenant = self.leases[lease].tenant;
        let keys: Vec<u8> = self
            .listings
            .iter()
            .filter(|(k, l)| k.0 == tenant && l.lease == lease)
            .map(|(k, _)| k.1)
            .collect();
        for key in keys {
            self.remove_listing(tenant, key);
        }
    }

    fn pending_on(&self, instance: usize) -> usize {
        self.attempts
            .iter()
            .filter(|a| a.present && a.instance == instance && a.phase != PhaseM::Consumed)
            .count()
    }

    /// A transaction: staging takes what input rules allow (a listing, a
    /// claim or a schedule name written once; an append only to a stream
    /// that is there, which takes its offset now). The commit checks the
    /// appends' room against the state before it, puts them in, then
    /// applies everything else in staging order, each change decided as
    /// it is applied; one refusal and nothing is visible (a refused
    /// commit keeps the reclaiming its publishes did on the way).
    fn transaction(&mut self, ops: &[Op], commit: bool, created_attempts: usize) -> Outcome {
        let now = self.now;
        let mut staged = Vec::new();
        let mut offsets = Vec::new();
        let mut kept: Vec<(Op, Option<u64>)> = Vec::new();
        let mut listings = std::collections::HashSet::new();
        let mut settles = std::collections::HashSet::new();
        let mut schedules = std::collections::HashSet::new();
        for op in ops {
            let (taken, offset) = match *op {
                Op::Publish { tenant, key, .. } | Op::Unpublish { tenant, key } => {
                    (listings.insert((tenant, key)), None)
                }
                Op::Append { tenant, stream } => match self.stream(tenant, stream) {
                    Some(s) => {
                        s.next += 1;
                        offsets.push(s.next - 1);
                        (true, Some(s.next - 1))
                    }
                    None => (false, None),
                },
                // Once per job (of the tenant's queue), whichever claim.
                Op::Settle { tenant, claim, .. } => {
                    (settles.insert((tenant, self.claims[claim])), None)
                }
                // Once per schedule name.
                Op::Schedule { tenant, name, .. } | Op::Unschedule { tenant, name } => {
                    (schedules.insert((tenant, name)), None)
                }
                _ => (true, None),
            };
            staged.push(taken);
            if taken {
                kept.push((op.clone(), offset));
            }
        }
        let outcome = |committed, failed| Outcome::Tx {
            staged: staged.clone(),
            offsets: offsets.clone(),
            committed,
            failed,
        };
        if !commit {
            return outcome(None, Vec::new());
        }
        let before = self.clone();
        match self.commit_tx(&kept, now, created_attempts) {
            Ok(failed) => outcome(Some(true), failed),
            Err(()) => {
                // Refused: nothing visible changed. But each publish, in
                // staging order up to the first that refuses, reclaimed
                // the invisible listing it found under its key (as the
                // sweeper would have), with that listing's attempts.
                let mut scratch = before.clone();
                let mut reclaimed = Vec::new();
                for (op, _) in &kept {
                    let Op::Publish { tenant, key, .. } = *op else {
                        continue;
                    };
                    let invisible = scratch.listings.contains_key(&(tenant, key))
                        && scratch.listing_visible(tenant, key).is_none();
                    if let Outcome::Err(_) = scratch.apply(op, created_attempts) {
                        break;
                    }
                    if invisible {
                        reclaimed.push((tenant, key));
                    }
                }
                *self = before;
                for (tenant, key) in reclaimed {
                    self.remove_listing(tenant, key);
                }
                outcome(Some(false), Vec::new())
            }
        }
    }

    fn commit_tx(
        &mut self,
        ops: &[(Op, Option<u64>)],
        now: u64,
        created_attempts: usize,
    ) -> Result<Vec<Option<u64>>, ()> {
        // Room for the appends, against the state before the commit (they
        // go in first). Everything else is decided as it is applied, in
        // staging order: an enqueue meets the acks and failures before it.
        let mut appends: HashMap<(u8, u8), usize> = HashMap::new();
        for (op, _) in ops {
            if let Op::Append { tenant, stream } = *op {
                *appends.entry((tenant, stream)).or_default() += 1;
            }
        }
        for (&(tenant, stream), &n) in &appends {
            let s = self.stream(tenant, stream).ok_or(())?;
            if !s.trim && s.entries.len() + n > STREAM_ENTRIES {
                return Err(());
            }
        }
        // The appends go in first, then the rest in staging order (so a
        // trim staged before an append drops the new entry too).
        for (op, offset) in ops {
            if let (Op::Append { tenant, stream }, Some(offset)) = (op, offset) {
                let s = self.stream(*tenant, *stream).ok_or(())?;
                s.push(*offset, now);
            }
        }
        let mut failed = Vec::new();
        let mut notifies = Vec::new();
        for (op, offset) in ops {
            match (op, offset) {
                (Op::Append { .. }, Some(_)) => {}
                (Op::Notify { .. }, _) => notifies.push(op.clone()),
                (op, _) => match self.apply(op, created_attempts) {
                    Outcome::Err(_) => return Err(()),
                    Outcome::Failed(f) => failed.push(f),
                    _ => {}
                },
            }
        }
        for op in notifies {
            self.apply(&op, created_attempts);
        }
        Ok(failed)
    }

    /// Applies `op`; `fence_of` maps an acquisition index to whether it is
    /// the current holder of its name.
    pub fn apply(&mut self, op: &Op, created_attempts: usize) -> Outcome {
        let now = self.now;
        match *op {
            Op::Grant { tenant, ttl_ms } => {
                if !ttl_ok(ttl_ms) {
                    return INVALID;
                }
                self.leases.push(LeaseM {
                    tenant,
                    deadline: now + ttl_ms,
                    present: true,
                });
                Outcome::Ok
            }
            Op::Renew {
                tenant,
                lease,
                ttl_ms,
            } => {
                if !ttl_ok(ttl_ms) {
                    return INVALID;
                }
                match self.lease_status(tenant, lease) {
                    Ok(()) => {
                        self.leases[lease].deadline = now + ttl_ms;
                        Outcome::Ok
                    }
                    Err(k) => Outcome::Err(k),
                }
            }
            Op::Revoke { tenant, lease } => match self.lease_status(tenant, lease) {
                Ok(()) => {
                    self.tombstones.insert(lease, now + TOMBSTONE_MS);
                    self.remove_lease(lease);
                    Outcome::Ok
                }
                Err(Kind::Revoked) => Outcome::Ok,
                Err(k) => Outcome::Err(k),
            },
            Op::GetLease { tenant, lease } => match self.lease_status(tenant, lease) {
                Ok(()) => Outcome::Ok,
                Err(k) => Outcome::Err(k),
            },
            Op::Publish { tenant, lease, key } => {
                if let Err(k) = self.lease_status(tenant, lease) {
                    return Outcome::Err(k);
                }
                // The narrow scope (the lease's cap) is decided before the
                // key is looked at.
                let on_lease = self
                    .listings
                    .iter()
                    .filter(|(k, l)| k.0 == tenant && l.lease == lease)
                    .count();
                if on_lease >= LISTINGS_PER_LEASE {
                    return Outcome::Err(Kind::Capacity("per-parent cap on listings".into()));
                }
                if self.listings.contains_key(&(tenant, key)) {
                    if self.listing_visible(tenant, key).is_some() {
                        return Outcome::Err(Kind::Conflict);
                    }
                    self.remove_listing(tenant, key);
                }
                self.instances += 1;
                self.listings.insert(
                    (tenant, key),
                    ListingM {
                        lease,
                        instance: self.instances,
                    },
                );
                Outcome::Ok
            }
            Op::GetListing { tenant, key } => match self.listing_visible(tenant, key) {
                Some(_) => Outcome::Ok,
                None => Outcome::Err(Kind::NotFound),
            },
            Op::Unpublish { tenant, key } => {
                if self.listing_visible(tenant, key).is_none() {
                    return Outcome::Err(Kind::NotFound);
                }
                self.remove_listing(tenant, key);
                Outcome::Ok
            }
            Op::BeginJoin {
                tenant,
                key,
                ttl_ms,
            } => {
                if !ttl_ok(ttl_ms) {
                    return INVALID;
                }
                if self.stalled() {
                    return Outcome::Err(Kind::ServiceUnavailable(
                        relaystore::Unavailable::DriverStalled,
                    ));
                }
                let Some(instance) = self.listing_visible(tenant, key).map(|l| l.instance) else {
                    return Outcome::Err(Kind::NotFound);
                };
                if self.pending_on(instance) >= ATTEMPTS_PER_LISTING {
                    return Outcome::Err(Kind::Capacity("per-parent cap on attempts".into()));
                }
                self.attempts.push(AttemptM {
                    tenant,
                    key,
                    instance,
                    deadline: now + ttl_ms,
                    phase: PhaseM::Pending,
                    present: true,
                });
                Outcome::Ok
            }
            Op::Bind {
                tenant, attempt, ..
            }
            | Op::Consume { tenant, attempt }
                if created_attempts > 0 =>
            {
                let is_bind = matches!(op, Op::Bind { .. });
                if self.stalled() {
                    return Outcome::Err(Kind::ServiceUnavailable(
                        relaystore::Unavailable::DriverStalled,
                    ));
                }
                let a = &self.attempts[attempt];
                if !a.present || a.tenant != tenant {
                    return Outcome::Err(Kind::NotFound);
                }
                if now >= a.deadline {
                    return Outcome::Err(Kind::Expired);
                }
                if a.phase == PhaseM::Consumed {
                    return Outcome::Err(Kind::ReplayRejected);
                }
                match self.listing_visible(tenant, a.key) {
                    Some(l) if l.instance == a.instance => {}
                    _ => return Outcome::Err(Kind::NotFound),
                }
                let a = &mut self.attempts[attempt];
                if is_bind {
                    let p = port_of(op);
                    match a.phase {
                        PhaseM::Pending => {
                            a.phase = PhaseM::Bound(p);
                            Outcome::Ok
                        }
                        PhaseM::Bound(q) if q == p => Outcome::Ok,
                        _ => Outcome::Err(Kind::Conflict),
                    }
                } else {
                    match a.phase {
                        PhaseM::Bound(_) => {
                            a.phase = PhaseM::Consumed;
                            a.deadline += self.grace_ms;
                            Outcome::Ok
                        }
                        _ => Outcome::Err(Kind::Conflict),
                    }
                }
            }
            Op::Cancel { tenant, attempt } if created_attempts > 0 => {
                let a = &mut self.attempts[attempt];
                if !a.present || a.tenant != tenant {
                    return Outcome::Err(Kind::NotFound);
                }
                if now >= a.deadline {
                    return Outcome::Err(Kind::Expired);
                }
                if a.phase == PhaseM::Consumed {
                    return Outcome::Err(Kind::ReplayRejected);
                }
                // The same ancestor rule as every other path.
                let (key, instance) = (a.key, a.instance);
                match self.listing_visible(tenant, key) {
                    Some(l) if l.instance == instance => {}
                    _ => return Outcome::Err(Kind::NotFound),
                }
                self.attempts[attempt].present = false;
                Outcome::Ok
            }
            Op::Bind { .. } | Op::Consume { .. } | Op::Cancel { .. } => Outcome::Ok,
            Op::Heartbeat {
                tenant,
                member,
                ttl_ms,
            } => {
                if !ttl_ok(ttl_ms) {
                    return INVALID;
                }
                self.presence.insert((tenant, member), now + ttl_ms);
                Outcome::Ok
            }
            Op::GetPresence { tenant, member } => match self.presence.get(&(tenant, member)) {
                Some(&d) if now < d => Outcome::Ok,
                Some(_) => Outcome::Err(Kind::Expired),
                None => Outcome::Err(Kind::NotFound),
            },
            Op::Leave { tenant, member } => match self.presence.get(&(tenant, member)) {
                Some(&d) if now < d => {
                    self.presence.remove(&(tenant, member));
                    Outcome::Ok
                }
                Some(_) => Outcome::Err(Kind::Expired),
                None => Outcome::Err(Kind::NotFound),
            },
            Op::TryLock {
                tenant,
                name,
                ttl_ms,
            } => {
                if !ttl_ok(ttl_ms) {
                    return INVALID;
                }
                match self.locks.get(&(tenant, name)) {
                    Some(l) if now < l.deadline => Outcome::Locked(false),
                    _ => {
                        self.acquisitions += 1;
                        self.locks.insert(
                            (tenant, name),
                            LockM {
                                deadline: now + ttl_ms,
                                acquisition: self.acquisitions,
                            },
                        );
                        Outcome::Locked(true)
                    }
                }
            }
            Op::Release {
                tenant,
                name,
                fence,
            } => {
                if self
                    .locks
                    .get(&(tenant, name))
                    .is_some_and(|l| l.acquisition == fence)
                {
                    self.locks.remove(&(tenant, name));
                }
                Outcome::Ok
            }
            Op::GetLock { tenant, name } => match self.locks.get(&(tenant, name)) {
                Some(l) if now < l.deadline => Outcome::Ok,
                _ => Outcome::Err(Kind::NotFound),
            },
            Op::CreateStream {
                tenant,
                stream,
                attached,
                lease,
                trim,
                aged,
            } => {
                let lease = attached.then_some(lease);
                if let Some(l) = lease {
                    if let Err(k) = self.lease_status(tenant, l) {
                        // Clearing an orphan comes first, and is invisible.
                        self.stream(tenant, stream);
                        return Outcome::Err(k);
                    }
                }
                let new = StreamM {
                    lease,
                    trim,
                    aged,
                    entries: Default::default(),
                    next: 0,
                    first: 0,
                    consumers: Default::default(),
                    groups: Default::default(),
                };
                match self.stream(tenant, stream) {
                    Some(s) if (s.lease, s.trim, s.aged) == (lease, trim, aged) => Outcome::Ok,
                    Some(_) => Outcome::Err(Kind::Exists),
                    None => {
                        self.streams.insert((tenant, stream), new);
                        Outcome::Ok
                    }
                }
            }
            Op::Append { tenant, stream } => {
                let Some(s) = self.stream(tenant, stream) else {
                    return Outcome::Err(Kind::NotFound);
                };
                if s.entries.len() >= STREAM_ENTRIES && !s.trim {
                    return Outcome::Err(Kind::Capacity(
                        "stream retention (refusing when full)".into(),
                    ));
                }
                let offset = s.next;
                s.push(offset, now);
                s.next += 1;
                Outcome::Offset(offset)
            }
            Op::ReadStream {
                tenant,
                stream,
                from,
            } => {
                let Some(s) = self.stream(tenant, stream) else {
                    return Outcome::Err(Kind::NotFound);
                };
                let from = u64::from(from);
                if from < s.first() {
                    return Outcome::Err(Kind::Trimmed(s.first()));
                }
                if from > s.next {
                    return INVALID;
                }
                let read: Vec<u64> = s
                    .entries
                    .iter()
                    .map(|&(o, _)| o)
                    .filter(|&o| o >= from)
                    .take(2)
                    .collect();
                Outcome::Read {
                    entries: read.len(),
                    next: read.last().map_or(from, |o| o + 1),
                }
            }
            Op::CommitStream {
                tenant,
                stream,
                consumer,
                offset,
            } => {
                let Some(s) = self.stream(tenant, stream) else {
                    return Outcome::Err(Kind::NotFound);
                };
                let offset = u64::from(offset);
                if offset > s.next {
                    return INVALID;
                }
                match s.consumers.get(&consumer) {
                    Some(&c) if offset < c => return Outcome::Err(Kind::Conflict),
                    None if s.readers() >= STREAM_CONSUMERS => {
                        return Outcome::Err(Kind::Capacity(
                            relaystore::Scope::StreamConsumers.to_string(),
                        ))
                    }
                    _ => {}
                }
                s.consumers.insert(consumer, offset);
                Outcome::Ok
            }
            Op::StreamInfo { tenant, stream } => {
                let Some(s) = self.stream(tenant, stream) else {
                    return Outcome::Err(Kind::NotFound);
                };
                let entries = s.entries.len() as u64;
                Outcome::Stream([
                    s.first,
                    s.next,
                    entries,
                    entries * STREAM_PAYLOAD.len() as u64,
                    s.consumers.len() as u64,
                ])
            }
            Op::TrimStream {
                tenant,
                stream,
                before,
            } => {
                let Some(s) = self.stream(tenant, stream) else {
                    return Outcome::Err(Kind::NotFound);
                };
                let before = u64::from(before);
                if before > s.next {
                    return INVALID;
                }
                while s.entries.front().is_some_and(|&(o, _)| o < before) {
                    s.pop_front();
                }
                s.first = s.first.max(before);
                Outcome::Offset(s.first)
            }
            Op::CreateGroup {
                tenant,
                stream,
                group,
                end,
            } => {
                let Some(s) = self.stream(tenant, stream) else {
                    return Outcome::Err(Kind::NotFound);
                };
                match s.groups.get(&group) {
                    Some(g) if g.end == end => Outcome::Ok,
                    Some(_) => Outcome::Err(Kind::Exists),
                    None if s.readers() >= STREAM_CONSUMERS => Outcome::Err(Kind::Capacity(
                        relaystore::Scope::StreamConsumers.to_string(),
                    )),
                    None => {
                        let next = if end { s.next } else { s.first() };
                        let pending = Default::default();
                        s.groups.insert(group, GroupM { end, next, pending });
                        Outcome::Ok
                    }
                }
            }
            Op::ReadGroup {
                tenant,
                stream,
                group,
                member,
            } => {
                let now = self.now;
                let (first, held, g) = match self.group(tenant, stream, group) {
                    Ok(found) => found,
                    Err(k) => return Outcome::Err(k),
                };
                if g.pending.len() >= GROUP_PENDING {
                    return Outcome::Err(Kind::Capacity(
                        relaystore::Scope::StreamGroupPending.to_string(),
                    ));
                }
                let skipped = first.saturating_sub(g.next);
                g.next = g.next.max(first);
                let room = 2.min(GROUP_PENDING - g.pending.len());
                let read: Vec<u64> = held
                    .into_iter()
                    .filter(|&o| o >= g.next)
                    .take(room)
                    .collect();
                for &o in &read {
                    let p = PendingM {
                        member,
                        deliveries: 1,
                        at: now,
                        dead: false,
                    };
                    g.pending.insert(o, p);
                    g.next = o + 1;
                }
                Outcome::GroupRead(read.iter().map(|&o| (o, 1)).collect(), skipped)
            }
            Op::AckGroup {
                tenant,
                stream,
                group,
                offset,
            } => {
                let g = match self.group(tenant, stream, group) {
                    Ok((_, _, g)) => g,
                    Err(k) => return Outcome::Err(k),
                };
                Outcome::Count(usize::from(g.pending.remove(&u64::from(offset)).is_some()))
            }
            Op::ClaimIdle {
                tenant,
                stream,
                group,
                member,
            } => {
                let now = self.now;
                let (first, _, g) = match self.group(tenant, stream, group) {
                    Ok(found) => found,
                    Err(k) => return Outcome::Err(k),
                };
                // Idle for GROUP_IDLE_MS, the longest idle first.
                let mut due: Vec<(u64, u64)> = g
                    .pending
                    .iter()
                    .filter(|(_, p)| !p.dead && now - p.at >= GROUP_IDLE_MS)
                    .map(|(&o, p)| (p.at, o))
                    .collect();
                due.sort_unstable();
                let (mut delivered, mut dead, mut trimmed) = (Vec::new(), Vec::new(), Vec::new());
                for (_, o) in due.into_iter().take(2) {
                    if o < first {
                        g.pending.remove(&o);
                        trimmed.push(o);
                        continue;
                    }
                    let p = g.pending.get_mut(&o).expect("listed");
                    if p.deliveries >= GROUP_DELIVERIES {
                        p.dead = true;
                        dead.push(o);
                    } else {
                        p.deliveries += 1;
                        p.member = member;
                        p.at = now;
                        delivered.push((o, p.deliveries));
                    }
                }
                Outcome::GroupClaim(delivered, dead, trimmed)
            }
            Op::GroupInfo {
                tenant,
                stream,
                group,
            } => {
                let g = match self.group(tenant, stream, group) {
                    Ok((_, _, g)) => g,
                    Err(k) => return Outcome::Err(k),
                };
                let dead = g.pending.values().filter(|p| p.dead).count() as u64;
                Outcome::Group([g.next, g.pending.len() as u64 - dead, dead])
            }
            Op::DeleteStream { tenant, stream } => match self.stream(tenant, stream) {
                Some(_) => {
                    self.streams.remove(&(tenant, stream));
                    Outcome::Ok
                }
                None => Outcome::Err(Kind::NotFound),
            },
            Op::Listen { tenant, channel } => {
                self.listeners.push((tenant, channel, 0));
                Outcome::Ok
            }
            Op::Notify { tenant, channel } => {
                for l in &mut self.listeners {
                    if (l.0, l.1) == (tenant, channel) {
                        l.2 = (l.2 + 1).min(WAKE_QUEUE);
                    }
                }
                Outcome::Ok
            }
            Op::TryRecv { listener } => {
                let queued = &mut self.listeners[listener].2;
                let woke = *queued > 0;
                *queued = queued.saturating_sub(1);
                Outcome::Woke(woke)
            }
            Op::Enqueue {
                tenant,
                delayed,
                big,
                low,
            } => self.enqueue(tenant, 1, delayed, big, low),
            Op::EnqueueBatch {
                tenant,
                n,
                delayed,
                big,
                low,
            } => self.enqueue(tenant, usize::from(n), delayed, big, low),
            Op::ExtendClaim { tenant, claim } => {
                let i = match self.live_claim(tenant, claim) {
                    Ok(i) => i,
                    Err(k) => return Outcome::Err(k),
                };
                let until = self.now + QUEUE_VISIBILITY_MS;
                self.jobs[i].at = JobAt::Claimed { claim, until };
                Outcome::Ok
            }
            Op::Snooze {
                tenant,
                claim,
                delayed,
            } => {
                let i = match self.live_claim(tenant, claim) {
                    Ok(i) => i,
                    Err(k) => return Outcome::Err(k),
                };
                let job = &mut self.jobs[i];
                job.attempts -= 1;
                job.at = if delayed {
                    JobAt::Delayed(self.now + QUEUE_DELAY_MS)
                } else {
                    JobAt::Ready
                };
                Outcome::Ok
            }
            Op::CancelJob { tenant, job } => {
                self.settle_queue(tenant);
                let j = &mut self.jobs[job];
                if j.tenant != tenant || j.gone {
                    return Outcome::Err(Kind::NotFound);
                }
                j.gone = true;
                Outcome::Ok
            }
            Op::Claim { tenant, short } => {
                self.settle_queue(tenant);
                let visibility = if short {
                    QUEUE_SHORT_MS
                } else {
                    QUEUE_VISIBILITY_MS
                };
                let now = self.now;
                let claim = self.claims.len();
                // By priority, then oldest (enqueue order is id order).
                let ready = self
                    .jobs
                    .iter()
                    .enumerate()
                    .filter(|(_, j)| j.tenant == tenant && !j.gone && j.at == JobAt::Ready)
                    .min_by_key(|(i, j)| (j.priority, *i))
                    .map(|(i, _)| i);
                Outcome::Claimed(ready.map(|i| {
                    let job = &mut self.jobs[i];
                    job.attempts += 1;
                    job.at = JobAt::Claimed {
                        claim,
                        until: now + visibility,
                    };
                    self.claims.push(i);
                    (i, job.attempts)
                }))
            }
            Op::Settle { tenant, claim, ack } => {
                let i = match self.live_claim(tenant, claim) {
                    Ok(i) => i,
                    Err(k) => return Outcome::Err(k),
                };
                let now = self.now;
                let job = &self.jobs[i];
                if ack {
                    self.jobs[i].gone = true;
                    return Outcome::Ok;
                }
                let attempts = job.attempts;
                if attempts >= QUEUE_ATTEMPTS {
                    self.jobs[i].at = JobAt::Dead;
                    self.jobs[i].lapsed = false;
                    return Outcome::Failed(None);
                }
                let draw = self
                    .queues
                    .entry(tenant)
                    .or_insert_with(|| QueueM {
                        jitter: relaystore::queue::Jitter::seeded(QUEUE_SEED),
                    })
                    .jitter
                    .next();
                // Equal jitter on a capped backoff of QUEUE_BACKOFF_MS: half
                // of it fixed, half drawn.
                let half = QUEUE_BACKOFF_MS / 2;
                let delay = half + draw % (QUEUE_BACKOFF_MS - half + 1);
                self.jobs[i].at = JobAt::Delayed(now + delay);
                Outcome::Failed(Some(delay))
            }
            Op::Tx { ref ops, commit } => self.transaction(ops, commit, created_attempts),
            Op::PurgeDead { tenant } => {
                self.settle_queue(tenant);
                let mut n = 0;
                for job in self.jobs.iter_mut() {
                    if job.tenant == tenant && !job.gone && job.at == JobAt::Dead {
                        job.gone = true;
                        n += 1;
                    }
                }
                Outcome::Count(n)
            }
            Op::QueueInfo { tenant } => {
                self.settle_queue(tenant);
                let now = self.now;
                let mut counts = [0; 5];
                for job in self.queue_jobs(tenant) {
                    let state = match job.at {
                        JobAt::Ready => 0,
                        JobAt::Delayed(_) => 1,
                        JobAt::Claimed { until, .. } => {
                            debug_assert!(now < until, "settled");
                            2
                        }
                        JobAt::Dead => 3,
                    };
                    counts[state] += 1;
                    counts[4] += job.bytes;
                }
                Outcome::Queue(counts)
            }
            Op::Job { tenant, job } => {
                self.settle_queue(tenant);
                let now = self.now;
                let j = &self.jobs[job];
                if j.tenant != tenant || j.gone {
                    return Outcome::Err(Kind::NotFound);
                }
                let (state, left) = match j.at {
                    JobAt::Ready => ('r', 0),
                    JobAt::Delayed(due) => ('d', due - now),
                    JobAt::Claimed { until, .. } => ('c', until - now),
                    JobAt::Dead if j.lapsed => ('l', 0),
                    JobAt::Dead => ('f', 0),
                };
                Outcome::Job(state, left, j.attempts)
            }
            Op::DeadLetters { tenant } => {
                self.settle_queue(tenant);
                Outcome::Jobs(
                    (0..self.jobs.len())
                        .filter(|&i| {
                            let j = &self.jobs[i];
                            j.tenant == tenant && !j.gone && j.at == JobAt::Dead
                        })
                        .collect(),
                )
            }
            Op::RequeueDead { tenant, job } => {
                self.settle_queue(tenant);
                let j = &mut self.jobs[job];
                if j.tenant != tenant || j.gone || j.at != JobAt::Dead {
                    return Outcome::Err(Kind::NotFound);
                }
                j.at = JobAt::Ready;
                j.attempts = 0;
                Outcome::Ok
            }
            Op::Schedule { tenant, name, slow } => {
                let interval = if slow {
                    SCHEDULE_SLOW_MS
                } else {
                    SCHEDULE_FAST_MS
                };
                if !self.schedules.contains_key(&(tenant, name)) {
                    let held = self.schedules.keys().filter(|k| k.0 == tenant).count() as u64;
                    let scope = if held >= SCHEDULES_PER_TENANT {
                        relaystore::Scope::Tenant(relaystore::events::Collection::Schedules)
                    } else if self.schedules.len() as u64 >= SCHEDULES {
                        relaystore::Scope::Collection(relaystore::events::Collection::Schedules)
                    } else {
                        self.schedules
                            .insert((tenant, name), (interval, self.now + interval));
                        return Outcome::Ok;
                    };
                    return Outcome::Err(Kind::Capacity(scope.to_string()));
                }
                // The same again (the driver's queue and payload never
                // change) keeps the grid; a replacement starts a new one
                // from now.
                let held = self.schedules.get_mut(&(tenant, name)).expect("held");
                if held.0 != interval {
                    *held = (interval, self.now + interval);
                }
                Outcome::Ok
            }
            Op::Unschedule { tenant, name } => match self.schedules.remove(&(tenant, name)) {
                Some(_) => Outcome::Ok,
                None => Outcome::Err(Kind::NotFound),
            },
            Op::ListSchedules { tenant } => Outcome::Schedules(
                self.schedules
                    .iter()
                    .filter(|(k, _)| k.0 == tenant)
                    .map(|(k, &(_, next))| (k.1, next.saturating_sub(self.now)))
                    .collect(),
            ),
            Op::Advance { ms } => {
                self.now += ms;
                Outcome::Ok
            }
            Op::Sweep => {
                let now = self.now;
                self.last_sweep = now;
                let expired: Vec<usize> = (0..self.leases.len())
                    .filter(|&i| self.leases[i].present && self.leases[i].deadline <= now)
                    .collect();
                for i in expired {
                    self.remove_lease(i);
                }
                for a in &mut self.attempts {
                    if a.present && a.deadline <= now {
                        a.present = false;
                    }
                }
                self.presence.retain(|_, d| now < *d);
                self.locks.retain(|_, l| now < l.deadline);
                self.tombstones.retain(|_, d| now < *d);
                for tenant in [0, 1] {
                    self.settle_queue(tenant);
                }
                Outcome::Ok
            }
        }
    }
}
