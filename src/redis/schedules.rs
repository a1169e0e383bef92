//! Schedules on Redis (SPEC §10, ADR 0034): `@every` schedules that
//! enqueue onto a queue of the same tenant on a grid, fired by whichever
//! relay instance holds the tenant's scheduler lock.
//!
//! A schedule lives in its tenant's slot beside the queues, so one
//! function checks the lock's fence, enqueues every fire that is due and
//! moves the schedule to its next grid point, atomically: a runner that
//! lost the lock fires nothing, and no fire is enqueued twice.

use super::reply::Reply;
use super::{quota_arg, scripts, Call, Issued, Mode, RedisEngine};
use crate::base::error::Result;
use crate::base::ids::TenantId;
use crate::contract::config::SCHEDULE_CATCH_UP_MAX;
use crate::contract::names::queue_wake_channel as wake_channel;
use crate::contract::names::SCHEDULER_LOCK;
use crate::contract::relay::LockInfo;
use crate::contract::schedule::{ScheduleInfo, ScheduleRun};
use redis::Value;
use std::time::Duration;

impl RedisEngine {
    /// Schedules `@every` fires of `payload` onto `queue` (which must
    /// exist), the first one interval from now; scheduling a name again
    /// replaces it. Refused as in memory
    /// ([`Store::schedule`](crate::Store::schedule)): a malformed spec or
    /// an interval outside `schedule_interval_min..=schedule_interval_max`
    /// (`InvalidArgument`), past `schedules_per_tenant_max` or
    /// `schedules_max` (`CapacityExceeded`), `Draining` while this handle
    /// drains.
    pub async fn schedule(
        &self,
        tenant: TenantId,
        name: &str,
        spec: &str,
        queue: &str,
        payload: &[u8],
    ) -> Result<()> {
        let call = self.schedule_call(name, spec, queue, payload)?;
        self.answer_call(tenant, call).await.map(drop)
    }

    /// [`schedule`](Self::schedule)'s call.
    pub(super) fn schedule_call(
        &self,
        name: &str,
        spec: &str,
        queue: &str,
        payload: &[u8],
    ) -> Result<Call> {
        let interval = self.config().check_schedule(name, spec, queue, payload)?;
        let args = scripts::ScheduleArgs {
            name: name.into(),
            spec: spec.into(),
            interval: interval.into(),
            queue: queue.into(),
            payload: payload.into(),
            quota: quota_arg(self.config().schedules_per_tenant_max).into(),
        }
        .encode();
        Ok(Call {
            function: scripts::SCHEDULE,
            mode: Mode::Creating,
            issued: Issued::Nothing,
            args,
        })
    }

    /// Removes a schedule (removal event `Schedules`, cause `Released`).
    /// Jobs it enqueued stay.
    pub async fn unschedule(&self, tenant: TenantId, name: &str) -> Result<()> {
        let call = self.unschedule_call(name)?;
        self.answer_call(tenant, call).await.map(drop)
    }

    /// [`unschedule`](Self::unschedule)'s call.
    pub(super) fn unschedule_call(&self, name: &str) -> Result<Call> {
        self.config().check_own_name(name)?;
        Ok(Call {
            function: scripts::UNSCHEDULE,
            mode: Mode::Existing,
            issued: Issued::Nothing,
            args: scripts::UnscheduleArgs { name: name.into() }.encode(),
        })
    }

    /// The tenant's schedules, by name.
    pub async fn schedules(&self, tenant: TenantId) -> Result<Vec<ScheduleInfo>> {
        let Some(reply) = self
            .run(
                scripts::SCHEDULES,
                tenant,
                Mode::Existing,
                Issued::Nothing,
                args![],
            )
            .await?
        else {
            return Ok(Vec::new());
        };
        reply.refusal()?;
        Ok(scripts::SchedulesReply::decode(&reply)?
            .each
            .into_iter()
            .map(|s| ScheduleInfo {
                name: s.name,
                spec: s.spec,
                interval: s.interval,
                queue: s.queue,
                next_in: s.next_in,
                fired: s.fired,
            })
            .collect())
    }

    /// Tries to take the tenant's scheduler lock
    /// ([`SCHEDULER_LOCK`]) for `runner`; renew it
    /// with [`renew_lock`](Self::renew_lock) under that name before every
    /// run, and pass its fence to [`run_schedules`](Self::run_schedules).
    pub async fn try_lead_schedules(
        &self,
        tenant: TenantId,
        runner: &str,
        ttl: Duration,
    ) -> Result<Option<LockInfo>> {
        self.take_lock(tenant, SCHEDULER_LOCK, runner, ttl, None)
            .await
    }

    /// Fires what is due, for the runner holding the scheduler lock with
    /// `fence` (`LeadershipLost` otherwise, and nothing fires): each
    /// schedule enqueues one job per grid point passed, at most
    /// `SCHEDULE_CATCH_UP_MAX` (the rest are skipped), and moves on, in
    /// the same atomic step. A schedule whose queue refuses is reported in
    /// `refused` and fires again at the next run; so is every due
    /// schedule while this handle drains (`Draining`, as its enqueues).
    pub async fn run_schedules(&self, tenant: TenantId, fence: u64) -> Result<ScheduleRun> {
        let args = scripts::RunSchedulesArgs {
            fence: fence.into(),
            lock_name: SCHEDULER_LOCK.into(),
            wake_prefix: wake_channel("").as_bytes().into(),
            catch_up_max: u64::from(SCHEDULE_CATCH_UP_MAX).into(),
            draining: self.refusing_new().into(),
        }
        .encode();
        let Some(reply) = self
            .run(
                scripts::RUN_SCHEDULES,
                tenant,
                Mode::Existing,
                Issued::Fence(fence),
                args,
            )
            .await?
        else {
            return Err(crate::base::error::Error::LeadershipLost);
        };
        reply.refusal()?;
        let r = scripts::RunSchedulesReply::decode(&reply)?;
        let mut run = ScheduleRun {
            fired: r.fired,
            skipped: r.skipped,
            refused: Vec::new(),
            next_in: u64::try_from(r.next_in).ok().map(Duration::from_millis),
        };
        for refused in r.each {
            // The refusal, as the function that refused would answer it.
            let refusal = Reply::new(
                [refused.code, refused.scope, refused.limit, refused.used]
                    .map(Value::Int)
                    .to_vec(),
            )?;
            if let Err(e) = refusal.refusal() {
                run.refused.push((refused.name, e));
            }
        }
        Ok(run)
    }
}
