//! Presence: heartbeats, lists, leave, lease attachment.
//! Every operation's happy path and typed errors, on a `ManualClock`.

mod common;

use common::ops::*;
use relaystore::ConflictReason;
use relaystore::Error;

#[test]
fn heartbeat_creates_then_refreshes_and_expires() {
    let (c, s) = store();
    let first = s
        .heartbeat(T, "alice", SEC * 5, Some(b"online"), None)
        .unwrap();
    c.advance(SEC * 4);
    let second = s.heartbeat(T, "alice", SEC * 5, None, None).unwrap();
    assert!(second.version > first.version);
    assert_eq!(second.remaining, SEC * 5);
    c.advance(SEC);
    let info = s.get_presence(T, "alice").unwrap();
    assert_eq!(info.remaining, SEC * 4, "measured at the read");
    assert_eq!(info.attrs.as_ref(), b"online", "attrs kept when not given");
    c.advance(SEC * 4);
    assert_eq!(s.get_presence(T, "alice"), Err(Error::Expired));
    s.sweep();
    assert_eq!(s.get_presence(T, "alice"), Err(Error::NotFound));
    assert_eq!(s.stats().presence, 0);
}

#[test]
fn presence_lists_and_leaves() {
    let (_c, s) = store();
    for m in ["c", "a", "b"] {
        s.heartbeat(T, m, SEC, None, None).unwrap();
    }
    let page = s.list_presence(T, None, 10).unwrap();
    let mut members: Vec<&str> = page.items.iter().map(|p| p.member.as_ref()).collect();
    // Pages come in the order of the records' places, not their names'.
    members.sort_unstable();
    assert_eq!(members, vec!["a", "b", "c"]);
    s.leave(T, "b").unwrap();
    assert_eq!(s.leave(T, "b"), Err(Error::NotFound));
    assert_eq!(s.list_presence(T, None, 10).unwrap().items.len(), 2);
}

#[test]
fn presence_attached_to_a_lease_dies_with_it() {
    let (_c, s) = store();
    let g = s.grant(T, "h", SEC * 60, None).unwrap();
    s.heartbeat(T, "alice", SEC * 30, None, Some(g.id)).unwrap();
    assert_eq!(s.get_presence(T, "alice").unwrap().lease, Some(g.id));
    let other = s.grant(T, "h2", SEC * 60, None).unwrap();
    assert!(matches!(
        s.heartbeat(T, "alice", SEC * 30, None, Some(other.id)),
        Err(Error::Conflict { .. })
    ));
    s.revoke(T, g.id).unwrap();
    assert_eq!(s.get_presence(T, "alice"), Err(Error::NotFound));
    assert_eq!(s.stats().presence, 0);
    assert_eq!(
        s.heartbeat(T, "bob", SEC, None, Some(g.id)),
        Err(Error::Revoked)
    );
    // The member can come back under a live lease.
    s.heartbeat(T, "alice", SEC * 30, None, Some(other.id))
        .unwrap();
}

#[test]
fn a_shorter_heartbeat_pulls_the_expiry_in() {
    let (c, s) = store();
    s.heartbeat(T, "alice", SEC * 60, None, None).unwrap();
    // Without attributes: the refresh that moves the deadline earlier.
    let short = s.heartbeat(T, "alice", SEC * 5, None, None).unwrap();
    assert_eq!(short.remaining, SEC * 5);
    c.advance(SEC * 5);
    assert_eq!(s.sweep(), 1, "swept at the earlier deadline");
    assert_eq!(s.get_presence(T, "alice"), Err(Error::NotFound));
    assert_eq!(s.stats().presence, 0);
}

#[test]
fn a_heartbeat_under_another_live_lease_reports_the_current_version() {
    let (_c, s) = store();
    let (a, b) = (
        s.grant(T, "h", SEC * 60, None).unwrap(),
        s.grant(T, "h2", SEC * 60, None).unwrap(),
    );
    s.heartbeat(T, "alice", SEC * 30, None, Some(a.id)).unwrap();
    let current = s.get_presence(T, "alice").unwrap().version;
    for attrs in [None, Some(&b"away"[..])] {
        assert_eq!(
            s.heartbeat(T, "alice", SEC * 30, attrs, Some(b.id)),
            Err(Error::Conflict {
                reason: ConflictReason::OtherLease,
                current_version: current
            })
        );
    }
    assert_eq!(s.get_presence(T, "alice").unwrap().version, current);
}
