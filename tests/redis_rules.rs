//! The contract's formulas that the Redis engine computes in Lua (the
//! backoff delay, the schedule grid's catch-up step, the claim-validity
//! rule) give, row for row, the answers of the tables the Rust functions
//! are tested against (`src/contract/rules.rs`): one reference for both.

mod redis;

use redis::{config, instances, on_every_target};
use relaystore::conformance::rule_tables::{BACKOFF, CATCH_UP, CLAIM_LIVE};

#[test]
fn the_lua_formulas_answer_every_row_of_the_rust_tables() {
    on_every_target("rules", |target, name| async move {
        let engine = instances(&target, &name, 1, config()).await.remove(0);
        let mut rows = 0;
        for &(base, max, attempt, draw, delay) in BACKOFF {
            let got = engine
                .probe_formula("backoff", &[base, max, u64::from(attempt), draw])
                .await
                .unwrap();
            assert_eq!(
                got,
                [delay.to_string()],
                "{name}: backoff({base}, {max}, {attempt}, {draw})"
            );
            rows += 1;
        }
        for &(next, now, interval, most, room, due, fires, to) in CATCH_UP {
            let got = engine
                .probe_formula("catch_up", &[next, now, interval, most, room])
                .await
                .unwrap();
            let want = [due.to_string(), fires.to_string(), to.to_string()];
            assert_eq!(
                got, want,
                "{name}: catch_up({next}, {now}, {interval}, {most}, {room})"
            );
            rows += 1;
        }
        for &(held, lapses, token, now, live) in CLAIM_LIVE {
            let got = engine
                .probe_formula("claim_live", &[held, lapses, token, now])
                .await
                .unwrap();
            let want = [if live { "1" } else { "0" }.to_owned()];
            assert_eq!(
                got, want,
                "{name}: claim_live({held}, {lapses}, {token}, {now})"
            );
            rows += 1;
        }
        assert_eq!(rows, BACKOFF.len() + CATCH_UP.len() + CLAIM_LIVE.len());
    });
}
