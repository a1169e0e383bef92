//! The in-memory engine's harness: one manual clock shared by every store
//! it makes, advanced (and swept) on demand, so the suite is exact.

use super::Harness;
use crate::base::error::Error;
use crate::base::time::ManualClock;
use crate::contract::config::StoreConfig;
use crate::store::{MemoryEngine, Store};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Makes in-memory stores on a shared [`ManualClock`], without expiry
/// drivers: [`advance`](Harness::advance) moves the clock and sweeps every
/// store it made.
#[derive(Default)]
pub struct InMemory {
    clock: Arc<ManualClock>,
    stores: Mutex<Vec<Store>>,
}

impl InMemory {
    /// A harness whose clock starts at zero.
    pub fn new() -> Self {
        Self::default()
    }
}

impl Harness for InMemory {
    type Engine = MemoryEngine;

    fn unit(&self) -> Duration {
        Duration::from_secs(1)
    }

    async fn engine(&self, config: StoreConfig) -> Result<MemoryEngine, Error> {
        let store = Store::builder()
            .config(config)
            .clock(self.clock.clone())
            .without_expiry_driver()
            .build()?;
        self.stores
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(store.clone());
        Ok(store.engine())
    }

    async fn advance(&self, elapsed: Duration) {
        self.clock.advance(elapsed);
        let stores = self.stores.lock().unwrap_or_else(|p| p.into_inner());
        for store in stores.iter() {
            store.sweep();
        }
    }
}
