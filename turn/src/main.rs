//! `relaystore-turn`: the TURN relay's binary. `--help` lists the options.

use relaystore::Store;
use relaystore_turn::config::USAGE;
use relaystore_turn::{state, Config, Records, Relay};
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--help") {
        println!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    let config = match Config::from_args(args) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("relaystore-turn: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let records = if config.redis.is_empty() {
        Store::builder()
            .config(state::store_config(&config))
            .expiry_tick(state::EXPIRY_TICK)
            .build()
            .map(Records::Memory)
    } else {
        Records::redis(
            &config.redis,
            &config.redis_namespace,
            state::store_config(&config),
        )
    };
    let records = match records {
        Ok(records) => records,
        Err(e) => {
            eprintln!("relaystore-turn: {e}");
            return ExitCode::from(2);
        }
    };
    let relay = match Relay::bind(config.clone(), records) {
        Ok(relay) => relay,
        Err(e) => {
            eprintln!("relaystore-turn: cannot listen on {}: {e}", config.listen);
            return ExitCode::FAILURE;
        }
    };
    let engine = if config.redis.is_empty() {
        "records in this process".to_string()
    } else {
        format!("records on Redis, namespace {}", config.redis_namespace)
    };
    eprintln!(
        "relaystore-turn: listening on {} (realm {}, relaying from {} ports {}-{}, {engine})",
        relay.handle().local_addr,
        config.realm,
        config.relay_ip,
        config.min_port,
        config.max_port
    );
    match relay.run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("relaystore-turn: {e}");
            ExitCode::FAILURE
        }
    }
}
