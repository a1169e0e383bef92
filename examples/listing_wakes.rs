//! A relay worker that follows a listing without polling: it waits on a
//! wake channel, and the host notifies the channel after each change, with
//! the change as the wake's payload. Wakes that arrive while the worker is
//! busy queue up, one per notify (at most `wake_queue_max`; beyond that the
//! oldest are dropped and counted): the worker takes every queued wake,
//! then reads the latest state once, so it never falls behind. When the
//! store stops, the worker's listener is closed and the worker ends.
//!
//! ```text
//! cargo run --example listing_wakes
//! ```

use relaystore::wake::RecvError;
use relaystore::{Store, TenantId};
use std::sync::mpsc;
use std::time::Duration;

const GAME: TenantId = TenantId(7);
const CHANNEL: &str = "listing:lobby-1";

fn main() -> Result<(), relaystore::Error> {
    let store = Store::builder().build()?;
    let lease = store.grant(GAME, "host-eu-1", Duration::from_secs(60), None)?;
    let listing = store.publish(GAME, lease.id, "lobby-1", b"players=0", None)?;

    // The worker attaches before the host changes anything, so it misses
    // nothing. It tells the host each time it has read a change, and goes
    // back to waiting when the host says so (so this example's output is
    // the same on every run).
    let listener = store.listen(GAME, CHANNEL)?;
    let (read, reads) = mpsc::channel();
    let (resume, resumed) = mpsc::channel::<()>();
    let worker = {
        let store = store.clone();
        std::thread::spawn(move || loop {
            match listener.blocking_recv() {
                Ok(first) => {
                    // Everything queued behind the first wake, then one read.
                    let wakes: Vec<_> = std::iter::once(first)
                        .chain(std::iter::from_fn(|| listener.try_recv()))
                        .collect();
                    let changes: Vec<_> = wakes
                        .iter()
                        .map(|w| String::from_utf8_lossy(&w.payload).into_owned())
                        .collect();
                    let attrs = store
                        .get_listing(GAME, "lobby-1")
                        .map(|l| String::from_utf8_lossy(&l.attrs).into_owned());
                    println!(
                        "worker: {} wake(s) on {:?} {changes:?}, lobby-1 is {:?}",
                        wakes.len(),
                        wakes[0].channel,
                        attrs
                    );
                    read.send(()).expect("the host waits for each read");
                    resumed.recv().expect("the host resumes the worker");
                }
                Err(RecvError::Closed) => {
                    println!("worker: the store stopped; done");
                    return;
                }
                Err(other) => panic!("{other:?}"),
            }
        })
    };

    let mut version = listing.version;
    let mut change = |players: u32| -> Result<(), relaystore::Error> {
        let attrs = format!("players={players}");
        version = store.update_listing(GAME, "lobby-1", version, attrs.as_bytes())?;
        println!("host: {attrs}, notify");
        store.notify_with(GAME, CHANNEL, attrs.as_bytes())
    };
    change(1)?;
    reads.recv().expect("the worker reads each change");
    resume.send(()).expect("the worker waits");
    change(2)?;
    reads.recv().expect("the worker reads each change");
    // The worker is busy (not resumed yet): three changes, three notifies,
    // three wakes queued when it comes back, and one read of the latest
    // state.
    for players in 3..=5 {
        change(players)?;
    }
    resume.send(()).expect("the worker waits");
    reads
        .recv()
        .expect("the worker reads the latest state once");
    // Stop the store: the worker's next receive reports it.
    store.begin_drain(Duration::ZERO)?;
    resume.send(()).expect("the worker waits");
    worker.join().expect("the worker ends");
    Ok(())
}
