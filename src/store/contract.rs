//! The in-memory engine's side of the engine contract: every operation is
//! the synchronous method of the same name, run inside a future that
//! completes in its first poll. That makes each future cancel-safe for
//! free (never polled: nothing happened; polled once: all of it did).

use super::{
    Admission, Binding, Cursor, EndpointSeen, Health, JoinTicket, LeaseGrant, LeaseInfo,
    ListingInfo, LockInfo, Page, PresenceInfo, Renewal, Store,
};
use crate::engine::{Engine, Events};
use crate::error::Result;
use crate::events::{Received, RecvError, Subscription};
use crate::ids::{AttemptId, JoinToken, LeaseId, TenantId};
use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

impl Engine for Store {
    type Events = Subscription;

    async fn grant(
        &self,
        tenant: TenantId,
        holder: &str,
        ttl: Duration,
        idempotency_key: Option<&str>,
    ) -> Result<LeaseGrant> {
        Store::grant(self, tenant, holder, ttl, idempotency_key)
    }

    async fn renew(&self, tenant: TenantId, id: LeaseId, ttl: Duration) -> Result<Renewal> {
        Store::renew(self, tenant, id, ttl)
    }

    async fn renew_at(
        &self,
        tenant: TenantId,
        id: LeaseId,
        ttl: Duration,
        version: u64,
    ) -> Result<Renewal> {
        Store::renew_at(self, tenant, id, ttl, version)
    }

    async fn get_lease(&self, tenant: TenantId, id: LeaseId) -> Result<LeaseInfo> {
        Store::get_lease(self, tenant, id)
    }

    async fn revoke(&self, tenant: TenantId, id: LeaseId) -> Result<()> {
        Store::revoke(self, tenant, id)
    }

    async fn observe_endpoint(
        &self,
        tenant: TenantId,
        lease: LeaseId,
        addr: SocketAddr,
    ) -> Result<()> {
        Store::observe_endpoint(self, tenant, lease, addr)
    }

    async fn endpoints(&self, tenant: TenantId, lease: LeaseId) -> Result<Vec<EndpointSeen>> {
        Store::endpoints(self, tenant, lease)
    }

    async fn publish(
        &self,
        tenant: TenantId,
        lease: LeaseId,
        key: &str,
        attrs: &[u8],
        idempotency_key: Option<&str>,
    ) -> Result<ListingInfo> {
        Store::publish(self, tenant, lease, key, attrs, idempotency_key)
    }

    async fn get_listing(&self, tenant: TenantId, key: &str) -> Result<ListingInfo> {
        Store::get_listing(self, tenant, key)
    }

    async fn update_listing(
        &self,
        tenant: TenantId,
        key: &str,
        expected_version: u64,
        attrs: &[u8],
    ) -> Result<u64> {
        Store::update_listing(self, tenant, key, expected_version, attrs)
    }

    async fn unpublish(
        &self,
        tenant: TenantId,
        key: &str,
        expected_version: Option<u64>,
    ) -> Result<()> {
        Store::unpublish(self, tenant, key, expected_version)
    }

    async fn revoke_listing(&self, tenant: TenantId, key: &str) -> Result<()> {
        Store::revoke_listing(self, tenant, key)
    }

    async fn list_listings(
        &self,
        tenant: TenantId,
        cursor: Option<&Cursor>,
        limit: usize,
    ) -> Result<Page<ListingInfo>> {
        Store::list_listings(self, tenant, cursor, limit)
    }

    async fn heartbeat(
        &self,
        tenant: TenantId,
        member: &str,
        ttl: Duration,
        attrs: Option<&[u8]>,
        lease: Option<LeaseId>,
    ) -> Result<Renewal> {
        Store::heartbeat(self, tenant, member, ttl, attrs, lease)
    }

    async fn get_presence(&self, tenant: TenantId, member: &str) -> Result<PresenceInfo> {
        Store::get_presence(self, tenant, member)
    }

    async fn list_presence(
        &self,
        tenant: TenantId,
        cursor: Option<&Cursor>,
        limit: usize,
    ) -> Result<Page<PresenceInfo>> {
        Store::list_presence(self, tenant, cursor, limit)
    }

    async fn leave(&self, tenant: TenantId, member: &str) -> Result<()> {
        Store::leave(self, tenant, member)
    }

    async fn begin_join(
        &self,
        tenant: TenantId,
        listing: &str,
        client: &str,
        ttl: Duration,
        idempotency_key: Option<&str>,
    ) -> Result<JoinTicket> {
        Store::begin_join(self, tenant, listing, client, ttl, idempotency_key)
    }

    async fn bind_endpoint(
        &self,
        tenant: TenantId,
        attempt: AttemptId,
        token: &JoinToken,
        observed: SocketAddr,
    ) -> Result<Binding> {
        Store::bind_endpoint(self, tenant, attempt, token, observed)
    }

    async fn consume(&self, tenant: TenantId, token: &JoinToken) -> Result<Admission> {
        Store::consume(self, tenant, token)
    }

    async fn cancel_join(&self, tenant: TenantId, attempt: AttemptId) -> Result<()> {
        Store::cancel_join(self, tenant, attempt)
    }

    async fn try_lock(
        &self,
        tenant: TenantId,
        name: &str,
        owner: &str,
        ttl: Duration,
        lease: Option<LeaseId>,
    ) -> Result<Option<LockInfo>> {
        Store::try_lock(self, tenant, name, owner, ttl, lease)
            .map(|taken| taken.map(|guard| guard.taken_by(owner)))
    }

    async fn get_lock(&self, tenant: TenantId, name: &str) -> Result<LockInfo> {
        Store::get_lock(self, tenant, name)
    }

    async fn renew_lock(
        &self,
        tenant: TenantId,
        name: &str,
        fence: u64,
        ttl: Duration,
    ) -> Result<Renewal> {
        Store::renew_lock(self, tenant, name, fence, ttl)
    }

    async fn release_lock(&self, tenant: TenantId, name: &str, fence: u64) -> Result<()> {
        Store::release_lock(self, tenant, name, fence)
    }

    async fn revoke_tenant(&self, tenant: TenantId) -> Result<()> {
        Store::revoke_tenant(self, tenant)
    }

    async fn health(&self) -> Health {
        Store::health(self)
    }

    async fn begin_drain(&self, window: Duration) -> Result<Duration> {
        Store::begin_drain(self, window)
    }

    async fn subscribe(&self) -> Result<Subscription> {
        Store::subscribe(self)
    }
}

impl Events for Subscription {
    fn try_recv(&self) -> Option<Received> {
        Subscription::try_recv(self)
    }

    fn recv(&self) -> impl Future<Output = std::result::Result<Received, RecvError>> + Send {
        self.recv_async()
    }
}
