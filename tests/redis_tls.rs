//! The Redis engine over TLS (`rediss://`, feature `redis-tls`): a server
//! whose certificate chains to the given authority is used; one that does
//! not chain to a trusted authority, or a plain connection to a TLS port,
//! is refused at connect. The server comes from `scripts/redis-servers`.

mod redis;

use redis::{block_on, config, fresh_namespace, tls_target};
use relaystore::redis::{RedisEngine, RedisOptions};
use relaystore::{Error, Health, RelayEngine, TenantId};
use std::time::Duration;

const T: TenantId = TenantId(1);

fn options(url: &str) -> RedisOptions {
    RedisOptions::standalone(url)
        .namespace(&fresh_namespace("tls"))
        .call_timeout(Duration::from_secs(5))
}

#[test]
fn a_server_whose_certificate_chains_to_the_given_authority_serves() {
    let (url, ca) = tls_target();
    block_on(async {
        let e = RedisEngine::connect(options(&url).tls_root_certificates(&ca), config())
            .await
            .unwrap_or_else(|e| panic!("connect over TLS to {url}: {e}"));
        let g = e
            .grant(T, "host", Duration::from_secs(30), None)
            .await
            .unwrap();
        let info = e.get_lease(T, g.id).await.unwrap();
        assert_eq!(info.holder.as_str(), "host");
        assert_eq!(RelayEngine::health(&e).await, Health::Ready);
    });
}

#[test]
fn a_certificate_no_trusted_authority_issued_is_refused() {
    let (url, _) = tls_target();
    block_on(async {
        // The system's roots do not include the test authority.
        let refused = RedisEngine::connect(options(&url), config()).await;
        assert!(
            matches!(refused, Err(Error::BackendUnavailable { .. })),
            "an untrusted certificate: {:?}",
            refused.map(drop)
        );
        // Nor does another authority vouch for it.
        let other = include_bytes!("redis/other-authority.pem");
        let refused =
            RedisEngine::connect(options(&url).tls_root_certificates(other), config()).await;
        assert!(
            matches!(refused, Err(Error::BackendUnavailable { .. })),
            "a certificate of another authority: {:?}",
            refused.map(drop)
        );
    });
}

#[test]
fn a_plain_connection_to_the_tls_port_is_refused() {
    let (url, _) = tls_target();
    let plain = url.replacen("rediss://", "redis://", 1);
    block_on(async {
        let refused = RedisEngine::connect(
            options(&plain).connect_timeout(Duration::from_secs(2)),
            config(),
        )
        .await;
        assert!(
            matches!(refused, Err(Error::BackendUnavailable { .. })),
            "plain text to a TLS port: {:?}",
            refused.map(drop)
        );
    });
}

#[test]
fn tls_options_that_cannot_work_are_refused_before_connecting() {
    block_on(async {
        let mixed = RedisOptions::cluster(&["rediss://127.0.0.1:1/", "redis://127.0.0.1:2/"]);
        assert_eq!(
            RedisEngine::connect(mixed, config()).await.map(drop),
            Err(Error::InvalidConfig {
                field: "target",
                rule: "every URL is redis://, or every URL is rediss://",
                values: String::new(),
            })
        );
        let plain = RedisOptions::standalone("redis://127.0.0.1:1/").tls_root_certificates(b"pem");
        assert_eq!(
            RedisEngine::connect(plain, config()).await.map(drop),
            Err(Error::InvalidConfig {
                field: "tls_root_certificates",
                rule: "apply to rediss:// URLs only",
                values: String::new(),
            })
        );
    });
}
