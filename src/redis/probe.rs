//! The contract's formulas as the Lua library computes them, for the test
//! that holds them to the rows of the contract's tables
//! (`relaystore::conformance::rule_tables`): the backoff delay, the schedule
//! grid's catch-up step and the claim-validity rule are each written in Rust
//! and again in Lua (they run inside a transition), and this is how the two
//! are pinned to one reference.

use super::{scripts, RedisEngine};
use crate::base::error::Result;

impl RedisEngine {
    /// Evaluates one of the library's formulas (`"backoff"`, `"catch_up"`
    /// or `"claim_live"`) on `inputs`, in the order of its table's rows, and
    /// returns its outputs as the library formats them. Touches no key.
    #[doc(hidden)]
    pub async fn probe_formula(&self, formula: &str, inputs: &[u64]) -> Result<Vec<String>> {
        let args = scripts::ProbeArgs {
            formula: formula.into(),
            inputs: inputs.iter().map(|&i| i.into()).collect(),
        }
        .encode();
        let key = format!("{{{}}}:probe", self.inner.namespace);
        self.inner.conn.call(scripts::PROBE, &key, args).await
    }
}
