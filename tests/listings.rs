//! Listings: publish, update, unpublish, paging, per-lease caps.
//! Every operation's happy path and typed errors, on a `ManualClock`.

mod common;

use common::ops::*;
use relaystore::events::Collection;
use relaystore::{ConflictReason, Error, Scope};

#[test]
fn publish_get_update_unpublish() {
    let (_c, s) = store();
    let g = s.grant(T, "h", SEC * 60, None).unwrap();
    let l = s.publish(T, g.id, "lobby", b"a=1", None).unwrap();
    assert_eq!((l.lease, l.attrs.as_ref()), (g.id, &b"a=1"[..]));
    assert_eq!(s.get_listing(T, "lobby").unwrap(), l);
    let v2 = s.update_listing(T, "lobby", l.version, b"a=2").unwrap();
    assert!(v2 > l.version);
    assert_eq!(
        s.update_listing(T, "lobby", l.version, b"a=3"),
        Err(Error::Conflict {
            reason: ConflictReason::Version,
            current_version: v2
        })
    );
    assert_eq!(s.get_listing(T, "lobby").unwrap().attrs.as_ref(), b"a=2");
    assert_eq!(
        s.unpublish(T, "lobby", Some(l.version)),
        Err(Error::Conflict {
            reason: ConflictReason::Version,
            current_version: v2
        })
    );
    s.unpublish(T, "lobby", Some(v2)).unwrap();
    assert_eq!(s.get_listing(T, "lobby"), Err(Error::NotFound));
    assert_eq!(s.unpublish(T, "lobby", None), Err(Error::NotFound));
}

#[test]
fn publishing_a_live_key_conflicts_and_a_freed_key_is_reusable() {
    let (_c, s) = store();
    let g = s.grant(T, "h", SEC * 60, None).unwrap();
    let l = s.publish(T, g.id, "lobby", b"", None).unwrap();
    assert_eq!(
        s.publish(T, g.id, "lobby", b"", None),
        Err(Error::Conflict {
            reason: ConflictReason::NameTaken,
            current_version: l.version
        })
    );
    s.unpublish(T, "lobby", None).unwrap();
    let again = s.publish(T, g.id, "lobby", b"", None).unwrap();
    assert!(again.version > l.version, "versions grow across re-publish");
}

#[test]
fn listing_is_invisible_as_soon_as_its_lease_expires() {
    let (c, s) = store();
    let g = s.grant(T, "h", SEC, None).unwrap();
    s.publish(T, g.id, "lobby", b"", None).unwrap();
    c.advance(SEC);
    assert_eq!(s.get_listing(T, "lobby"), Err(Error::NotFound));
    assert!(s.list_listings(T, None, 10).unwrap().items.is_empty());
    assert_eq!(s.publish(T, g.id, "other", b"", None), Err(Error::Expired));
    s.sweep();
    assert_eq!(s.stats().listings, 0, "cascaded with the expired lease");
}

#[test]
fn publish_validates_and_respects_the_per_lease_cap() {
    let (_c, s) = store();
    let g = s.grant(T, "h", SEC * 60, None).unwrap();
    assert_eq!(s.publish(T, g.id, "", b"", None), Err(Error::InvalidName));
    assert!(matches!(
        s.publish(T, g.id, "k", &[0; 1025], None),
        Err(Error::InvalidArgument { .. })
    ));
    for k in ["a", "b", "c"] {
        s.publish(T, g.id, k, b"", None).unwrap();
    }
    assert_eq!(
        (s.publish(T, g.id, "d", b"", None)).map_err(|e| e.capacity_scope()),
        Err(Some(Scope::Parent(Collection::Listings)))
    );
    assert_eq!(
        s.stats().listings,
        3,
        "the refused listing left nothing behind"
    );
    s.revoke(T, g.id).unwrap();
    assert_eq!(s.publish(T, g.id, "e", b"", None), Err(Error::Revoked));
}

#[test]
fn paged_listing_returns_each_stable_listing_exactly_once() {
    let (_c, s) = store_with(config().listings_per_lease_max(100));
    let g = s.grant(T, "h", SEC * 60, None).unwrap();
    for i in 0..25 {
        s.publish(T, g.id, &format!("k{i:02}"), b"", None).unwrap();
    }
    let mut seen = Vec::new();
    let mut cursor = None;
    let mut pages = 0;
    loop {
        let page = s.list_listings(T, cursor.as_ref(), 7).unwrap();
        pages += 1;
        // Churn between pages: unpublish one ahead, publish new ones.
        if pages == 2 {
            s.unpublish(T, "k20", None).unwrap();
            s.publish(T, g.id, "k07x", b"", None).unwrap(); // behind the cursor
            s.publish(T, g.id, "k99", b"", None).unwrap(); // ahead of it
        }
        seen.extend(page.items.into_iter().map(|l| l.key.to_string()));
        match page.next {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    let stable: Vec<String> = (0..25)
        .filter(|&i| i != 20)
        .map(|i| format!("k{i:02}"))
        .collect();
    for k in &stable {
        assert_eq!(
            seen.iter().filter(|s| *s == k).count(),
            1,
            "{k} in {seen:?}"
        );
    }
    assert!(!seen.contains(&"k20".to_string()));
    assert!(matches!(
        s.list_listings(T, None, 0),
        Err(Error::InvalidArgument { .. })
    ));
    assert!(s.list_listings(OTHER, None, 10).unwrap().items.is_empty());
}

#[test]
fn a_cursor_survives_a_trip_through_text() {
    let (_c, s) = store();
    let g = s.grant(T, "h", SEC * 60, None).unwrap();
    for key in ["a", "b", "c"] {
        s.publish(T, g.id, key, b"", None).unwrap();
    }
    let first = s.list_listings(T, None, 1).unwrap();
    let cursor = first.next.expect("more to come");
    let sent = cursor.to_string();
    let back = relaystore::Cursor::from(sent.as_str());
    assert_eq!(back, cursor);
    let keys = |p: relaystore::Page<relaystore::ListingInfo>| {
        p.items.into_iter().map(|l| l.key).collect::<Vec<_>>()
    };
    assert_eq!(
        keys(s.list_listings(T, Some(&back), 2).unwrap()),
        keys(s.list_listings(T, Some(&cursor), 2).unwrap())
    );
}

#[test]
fn a_cursor_no_page_gave_is_refused() {
    let (_c, s) = store();
    let g = s.grant(T, "h", SEC * 60, None).unwrap();
    s.publish(T, g.id, "a", b"", None).unwrap();
    for text in ["a", "", "-1", "lobby-7"] {
        let forged = relaystore::Cursor::from(text);
        assert!(
            matches!(
                s.list_listings(T, Some(&forged), 2),
                Err(Error::InvalidArgument { .. })
            ),
            "listings after {text:?}"
        );
        assert!(
            matches!(
                s.list_presence(T, Some(&forged), 2),
                Err(Error::InvalidArgument { .. })
            ),
            "presence after {text:?}"
        );
    }
}
