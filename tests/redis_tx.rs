//! Transactions on Redis (ADR 0069): a refused commit takes back every
//! write its changes made, key by key. A batch with every kind of change,
//! over records that make the functions reap, trim, pop, dead-letter and
//! delete, ends in a refusal; every key of the namespace reads the same
//! afterwards (contents and expiry). The conformance suite checks what the
//! operations answer; this checks the keys under them.

mod redis;

use redis::{block_on, connect_fresh, fresh_namespace, targets, Raw};
use relaystore::queue::{JobOptions, QueueConfig};
use relaystore::stream::{StreamConfig, WhenFull};
use relaystore::{Error, TenantId, TxBatch};
use std::time::Duration;

const T: TenantId = TenantId(1);

/// Every key of the namespace with its type, contents and expiry, sorted.
async fn snapshot(raw: &mut Raw, namespace: &str) -> Vec<String> {
    let mut keys: Vec<String> = Vec::new();
    let mut cursor = 0u64;
    loop {
        let (next, batch): (u64, Vec<String>) = raw
            .query(
                ::redis::cmd("SCAN")
                    .arg(cursor)
                    .arg("MATCH")
                    .arg(format!("{{{namespace}*"))
                    .arg("COUNT")
                    .arg(1000),
            )
            .await;
        keys.extend(batch);
        cursor = next;
        if cursor == 0 {
            break;
        }
    }
    keys.sort();
    let mut out = Vec::new();
    for key in keys {
        let kind: String = raw.query(::redis::cmd("TYPE").arg(&key)).await;
        let mut contents: Vec<Vec<u8>> = match kind.as_str() {
            "string" => vec![raw.query(::redis::cmd("GET").arg(&key)).await],
            "hash" => raw.query(::redis::cmd("HGETALL").arg(&key)).await,
            "zset" => {
                raw.query(
                    ::redis::cmd("ZRANGE")
                        .arg(&key)
                        .arg(0)
                        .arg(-1)
                        .arg("WITHSCORES"),
                )
                .await
            }
            "set" => raw.query(::redis::cmd("SMEMBERS").arg(&key)).await,
            "list" => {
                raw.query(::redis::cmd("LRANGE").arg(&key).arg(0).arg(-1))
                    .await
            }
            other => panic!("a key of type {other}"),
        };
        if kind == "hash" {
            // Field order is not content: sort the pairs.
            let mut pairs: Vec<(Vec<u8>, Vec<u8>)> = contents
                .chunks(2)
                .map(|p| (p[0].clone(), p[1].clone()))
                .collect();
            pairs.sort();
            contents = pairs.into_iter().flat_map(|(f, v)| [f, v]).collect();
        }
        if kind == "set" {
            contents.sort();
        }
        let expiry: i64 = raw.query(::redis::cmd("PEXPIRETIME").arg(&key)).await;
        out.push(format!(
            "{key} {kind} expires {expiry}: {:?}",
            contents
                .iter()
                .map(|c| String::from_utf8_lossy(c).into_owned())
                .collect::<Vec<_>>()
        ));
    }
    out
}

#[test]
fn a_refused_commit_leaves_every_key_as_it_was() {
    let target = targets()
        .into_iter()
        .find(|t| t.name == "standalone")
        .expect("a standalone target");
    block_on(async {
        let namespace = fresh_namespace("tx-keys");
        // No sweeper pass within the test: only its own calls write.
        let options = target
            .options
            .clone()
            .sweep_interval(Duration::from_secs(60));
        let quiet = redis::Target {
            name: target.name,
            options,
        };
        let e = connect_fresh(&quiet, &namespace, redis::config())
            .await
            .unwrap();
        let mut raw = Raw::connect(&target).await;
        let long = Duration::from_secs(60);
        let lease = e.grant(T, "host-a", long, None).await.unwrap();
        let v1 = e
            .publish(T, lease.id, "lobby-1", b"players=3", None)
            .await
            .unwrap()
            .version;
        e.publish(T, lease.id, "lobby-x", b"closing", None)
            .await
            .unwrap();
        // A listing whose lease expires: the next creation reaps it.
        let short = e
            .grant(T, "host-b", Duration::from_millis(20), None)
            .await
            .unwrap();
        e.publish(T, short.id, "old", b"gone soon", None)
            .await
            .unwrap();
        // A full stream that trims its oldest entry on an append.
        let log = StreamConfig::new(2, 1024, WhenFull::TrimOldest);
        e.create_stream(T, "log", log).await.unwrap();
        for p in [&b"e0"[..], b"e1"] {
            e.append(T, "log", p, None).await.unwrap();
        }
        e.commit(T, "log", "reader", 1).await.unwrap();
        // A queue of one attempt: a failure dead-letters the job.
        let queue = QueueConfig::default().attempts_max(1);
        e.create_queue(T, "work", queue).await.unwrap();
        for p in [&b"a"[..], b"b", b"c"] {
            e.enqueue(T, "work", p, JobOptions::default())
                .await
                .unwrap();
        }
        let claimed = e.claim(T, "work", "w", Some(long), 2).await.unwrap();
        e.outbox_put(T, "made", b"the outbox's queue", None)
            .await
            .unwrap();
        e.schedule(T, "beat", "@every 1s", "work", b"tick")
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;

        let batch = |refused: bool| {
            let mut tx = TxBatch::new(T);
            tx.publish(lease.id, "lobby-2", b"players=1").unwrap();
            tx.update_listing("lobby-1", v1, b"players=4").unwrap();
            tx.unpublish("lobby-x", None).unwrap();
            tx.append("log", b"e2").unwrap();
            tx.append("log", b"e3").unwrap();
            tx.commit_offset("log", "reader", 3).unwrap();
            tx.commit_offset("log", "other", 2).unwrap();
            tx.trim_stream("log", 3).unwrap();
            tx.enqueue("work", b"d", JobOptions::default()).unwrap();
            tx.outbox_put("lobby.changed", b"lobby-1").unwrap();
            tx.ack("work", claimed[0].id, claimed[0].claim).unwrap();
            tx.fail("work", claimed[1].id, claimed[1].claim, "busy")
                .unwrap();
            tx.unschedule("beat").unwrap();
            tx.schedule("beat-2", "@every 2s", "work", b"tock").unwrap();
            tx.notify("lobby-changed").unwrap();
            if refused {
                tx.update_listing("lobby-3", 1, b"never").unwrap();
            }
            tx
        };
        let before = snapshot(&mut raw, &namespace).await;
        assert!(
            before.iter().any(|k| k.contains(":p:old ")),
            "the expired listing is there to reap: {before:#?}"
        );
        assert_eq!(
            e.commit_tx(batch(true)).await.map(drop),
            Err(Error::NotFound)
        );
        let after = snapshot(&mut raw, &namespace).await;
        assert_eq!(after, before, "the keys after a refused commit");

        // The same batch without its refusal changes them: the snapshot
        // sees what a commit writes.
        let done = e.commit_tx(batch(false)).await.unwrap();
        assert_eq!(done.applied.len(), 15);
        assert_ne!(snapshot(&mut raw, &namespace).await, before);
        assert_eq!(
            e.get_listing(T, "lobby-1").await.unwrap().attrs.as_ref(),
            b"players=4"
        );
        assert_eq!(e.stream_info(T, "log").await.unwrap().first, 3);
    });
}

/// A transaction call that raised an error part way (here: a change whose
/// function does not exist, after an append) leaves nothing behind for
/// later calls: the next call neither journals nor holds back what it
/// publishes, so another handle still hears of a revocation.
#[test]
fn a_transaction_that_raised_an_error_leaves_later_calls_as_they_were() {
    let target = targets()
        .into_iter()
        .find(|t| t.name == "standalone")
        .expect("a standalone target");
    block_on(async {
        let namespace = fresh_namespace("tx-error");
        let a = connect_fresh(&target, &namespace, redis::config())
            .await
            .unwrap();
        let b = connect_fresh(&target, &namespace, redis::config())
            .await
            .unwrap();
        let heard = b.subscribe().await.unwrap();
        a.create_stream(T, "log", StreamConfig::new(8, 1024, WhenFull::Refuse))
            .await
            .unwrap();
        let lease = a
            .grant(T, "host-a", Duration::from_secs(60), None)
            .await
            .unwrap();

        // The library's `tx` function, called by hand as the engine would,
        // with a second change that names no function.
        let mut raw = Raw::connect(&target).await;
        let libraries: ::redis::Value = raw.query(::redis::cmd("FUNCTION").arg("LIST")).await;
        let tx = names(&libraries)
            .into_iter()
            .find(|n| n.starts_with("relaystore_") && n.ends_with("_tx"))
            .expect("the library's tx function");
        let key = format!("{{{namespace}:{}}}:inc", T.0);
        let incarnation: String = raw.query(::redis::cmd("HGET").arg(&key).arg("i")).await;
        let raised: ::redis::RedisResult<::redis::Value> = match &mut raw {
            Raw::One(c) => {
                ::redis::cmd("FCALL")
                    .arg(&tx)
                    .arg(1)
                    .arg(&key)
                    .arg(&incarnation)
                    .arg("r0")
                    .arg(2)
                    .arg("append")
                    .arg(6)
                    .arg("log")
                    .arg("entry")
                    .arg("__stream:log")
                    .arg("")
                    .arg(1000)
                    .arg(-1)
                    .arg("no_such_change")
                    .arg(0)
                    .query_async(c)
                    .await
            }
            Raw::Many(_) => unreachable!("a standalone target"),
        };
        assert!(raised.is_err(), "the call raised: {raised:?}");

        // A later call on its own: its removal event reaches the other
        // handle.
        a.revoke(T, lease.id).await.unwrap();
        let got = tokio::time::timeout(Duration::from_secs(2), heard.recv()).await;
        assert!(
            matches!(got, Ok(Ok(_))),
            "the other handle heard nothing of the revocation: {got:?}"
        );
    });
}

/// Every text in a reply, depth first.
fn names(value: &::redis::Value) -> Vec<String> {
    match value {
        ::redis::Value::BulkString(b) => vec![String::from_utf8_lossy(b).into_owned()],
        ::redis::Value::SimpleString(s) => vec![s.clone()],
        ::redis::Value::Array(items) | ::redis::Value::Set(items) => {
            items.iter().flat_map(names).collect()
        }
        ::redis::Value::Map(pairs) => pairs
            .iter()
            .flat_map(|(k, v)| names(k).into_iter().chain(names(v)))
            .collect(),
        _ => Vec::new(),
    }
}
