//! The outbox: at-least-once delivery through a handler, retries with
//! backoff, dead letters, and a panicking handler that loses nothing.

mod common;

use common::ops::*;
use relaystore::{Error, OutboxMessage, OUTBOX_QUEUE};
use std::time::Duration;

#[test]
fn delivered_messages_leave_and_failed_ones_come_back_after_a_backoff() {
    let (clock, s) = store();
    let first = s.outbox_put(T, "session.ended", b"s-1", None).unwrap();
    let second = s.outbox_put(T, "session.ended", b"s-2", None).unwrap();
    let mut seen: Vec<OutboxMessage> = Vec::new();
    let run = s
        .outbox_run_once(T, "relay-a", 10, |m| {
            seen.push(m.clone());
            if m.payload.as_ref() == b"s-1" {
                Ok(())
            } else {
                Err("matchmaker unreachable")
            }
        })
        .unwrap();
    assert_eq!((run.delivered, run.retried, run.dead), (1, 1, 0));
    assert_eq!(
        seen.iter().map(|m| m.id).collect::<Vec<_>>(),
        vec![first, second]
    );
    assert_eq!(
        (seen[0].topic.as_ref(), seen[0].attempt),
        ("session.ended", 1)
    );
    // Not due again until its backoff (at least half of 5 s) has passed.
    let nothing = s
        .outbox_run_once(T, "relay-a", 10, |_| Ok::<_, String>(()))
        .unwrap();
    assert_eq!(nothing.delivered, 0);
    clock.advance(Duration::from_secs(5));
    let mut attempts = Vec::new();
    let run = s
        .outbox_run_once(T, "relay-a", 10, |m| {
            attempts.push((m.id, m.attempt));
            Ok::<_, String>(())
        })
        .unwrap();
    assert_eq!(attempts, vec![(second, 2)]);
    assert_eq!(run.delivered, 1);
    assert_eq!(
        s.outbox_run_once(T, "r", 10, |_| Ok::<_, String>(()))
            .unwrap()
            .delivered,
        0
    );
    s.audit().unwrap();
}

#[test]
fn a_panicking_handler_counts_as_a_failure_and_its_last_attempt_dead_letters() {
    let (clock, s) = store();
    let id = s
        .outbox_put(T, "alloc.cleanup", b"port 4000", None)
        .unwrap();
    let mut dead = 0;
    for attempt in 1..=5 {
        let run = s
            .outbox_run_once(T, "relay-a", 10, |m| -> Result<(), String> {
                assert_eq!(m.attempt, attempt);
                panic!("handler bug on attempt {attempt}")
            })
            .unwrap();
        assert_eq!(run.retried + run.dead, 1, "attempt {attempt} was made");
        dead += run.dead;
        clock.advance(Duration::from_secs(300));
    }
    assert_eq!(dead, 1, "the fifth attempt dead-letters");
    // Nothing lost: the message is held as a dead letter, which an
    // operator can list and requeue.
    let letters = s.dead_letters(T, OUTBOX_QUEUE, None, 10).unwrap();
    assert_eq!(letters.len(), 1);
    assert_eq!(
        (letters[0].id, letters[0].reason.as_ref()),
        (id, "the handler panicked")
    );
    s.requeue_dead(T, OUTBOX_QUEUE, id).unwrap();
    let run = s.outbox_run_once(T, "relay-b", 10, |m| {
        assert_eq!(m.payload.as_ref(), b"port 4000");
        Ok::<_, String>(())
    });
    assert_eq!(run.unwrap().delivered, 1);
    assert_eq!(
        s.job(T, OUTBOX_QUEUE, id),
        Err(Error::NotFound),
        "delivered"
    );
    assert_eq!(
        s.enqueue(
            T,
            OUTBOX_QUEUE,
            b"",
            relaystore::queue::JobOptions::default()
        ),
        Err(Error::ReservedName),
        "only outbox_put writes to it"
    );
    assert!(matches!(
        s.outbox_put(T, "", b"", None),
        Err(Error::InvalidName)
    ));
    // The topic travels with the payload: together they must fit a job.
    let max = s.config().job_payload_bytes_max;
    assert!(matches!(
        s.outbox_put(T, "t", &vec![0; max - 2], None),
        Err(Error::InvalidArgument { .. })
    ));
    s.outbox_put(T, "t", &vec![0; max - 3], None).unwrap();
    s.audit().unwrap();
}
