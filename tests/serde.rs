//! The `serde` feature: what a relay puts on the wire travels as text a
//! client can use (ids and tokens in their `Display` forms, tenants as
//! numbers) and reads back equal.

mod common;

use common::{addr, store, A, SEC};
use relaystore::events::Received;
use relaystore::{Health, JoinToken, LeaseId, TenantId};
use serde_json::{json, Value};

fn round_trip<T>(value: &T) -> Value
where
    T: serde::Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug,
{
    let text = serde_json::to_string(value).unwrap();
    let back: T = serde_json::from_str(&text).unwrap();
    assert_eq!(&back, value, "{text}");
    serde_json::from_str(&text).unwrap()
}

#[test]
fn ids_and_tokens_travel_as_their_text_forms() {
    let (_clock, s) = store();
    let lease = s.grant(A, "host", SEC * 60, None).unwrap();
    s.publish(A, lease.id, "lobby", b"{}", None).unwrap();
    let ticket = s.begin_join(A, "lobby", "client", SEC * 10, None).unwrap();

    assert_eq!(round_trip(&lease.id), json!(lease.id.to_string()));
    assert_eq!(
        round_trip(&ticket.attempt),
        json!(ticket.attempt.to_string())
    );
    let token = round_trip(&ticket.token);
    assert_eq!(token, json!(ticket.token.to_string()));
    assert_eq!(token.as_str().unwrap().len(), 43);
    assert_eq!(round_trip(&TenantId(7)), json!(7));

    // Text that is not an id or a token is refused, not misread.
    assert!(serde_json::from_value::<LeaseId>(json!("lease-1")).is_err());
    assert!(serde_json::from_value::<JoinToken>(json!("short")).is_err());
    assert!(serde_json::from_value::<LeaseId>(json!(ticket.attempt.to_string())).is_err());
}

#[test]
fn what_the_operations_return_reads_back_equal() {
    let (_clock, s) = store();
    let grant = s.grant(A, "host", SEC * 60, None).unwrap();
    let json_grant = round_trip(&grant);
    assert_eq!(json_grant["id"], json!(grant.id.to_string()));
    assert_eq!(json_grant["fence"], json!(grant.fence));
    round_trip(&s.get_lease(A, grant.id).unwrap());
    round_trip(&s.publish(A, grant.id, "lobby", b"x", None).unwrap());
    let ticket = s.begin_join(A, "lobby", "client", SEC * 10, None).unwrap();
    round_trip(&ticket);
    round_trip(
        &s.bind_endpoint(A, ticket.attempt, &ticket.token, addr(9))
            .unwrap(),
    );
    round_trip(&s.consume(A, &ticket.token, None).unwrap());
    s.heartbeat(A, "m", SEC * 10, Some(b"a"), None).unwrap();
    let page = s.list_presence(A, None, 10).unwrap();
    round_trip(&page);
    let listings = s.list_listings(A, None, 1).unwrap();
    let json_page = round_trip(&listings);
    assert_eq!(json_page["items"][0]["key"], json!("lobby"));
    round_trip(&s.renew(A, grant.id, SEC * 60).unwrap());
    round_trip(&Health::Draining { remaining: SEC });

    let events = s.subscribe().unwrap();
    s.revoke(A, grant.id).unwrap();
    let received = events.try_recv_all();
    assert!(!received.is_empty());
    for r in &received {
        let v = round_trip(r);
        if let Received::Event(e) = r {
            assert_eq!(v["Event"]["tenant"], json!(e.tenant.0));
        }
    }
}

#[test]
fn attributes_travel_as_the_byte_sequence_they_always_did() {
    let (_clock, s) = store();
    let lease = s.grant(A, "host", SEC * 60, None).unwrap();
    let long = [b'x'; relaystore::Attrs::INLINE_BYTES + 9];
    for (key, attrs) in [("short", &b"mode=ffa"[..]), ("long", &long[..])] {
        let listing = s.publish(A, lease.id, key, attrs, None).unwrap();
        let as_arc: std::sync::Arc<[u8]> = std::sync::Arc::from(attrs);
        assert_eq!(
            round_trip(&listing)["attrs"],
            serde_json::to_value(&as_arc).unwrap(),
            "{key}"
        );
    }
}
