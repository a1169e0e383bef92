//! `relaystore-turn`: the TURN relay's binary. `--help` lists the options.

use relaystore::Store;
use relaystore_turn::config::USAGE;
use relaystore_turn::{state, Config, Relay};
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
    let store = Store::builder()
        .config(state::store_config(&config))
        .expiry_tick(state::EXPIRY_TICK)
        .build();
    let store = match store {
        Ok(store) => store,
        Err(e) => {
            eprintln!("relaystore-turn: {e}");
            return ExitCode::from(2);
        }
    };
    let relay = match Relay::bind(config.clone(), store) {
        Ok(relay) => relay,
        Err(e) => {
            eprintln!("relaystore-turn: cannot listen on {}: {e}", config.listen);
            return ExitCode::FAILURE;
        }
    };
    eprintln!(
        "relaystore-turn: listening on {} (realm {}, relaying from {} ports {}-{})",
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
