//! Lease renewal on the embedded store next to the same workload on Redis,
//! for the scale-out question: what does moving leases to a shared Redis
//! cost per node?
//!
//! Runs only when `REDIS_URL` is set (`redis://[:password@]host:port[/db]`);
//! otherwise it says so and exits. Each lease is a Redis key holding its
//! holder, created with `SET key holder PX ttl`; a renewal is one `EVALSHA`
//! of a script that extends the key only if it still holds the caller's
//! holder (the check-and-extend a lease needs, in one round trip). Threads
//! each use their own connection, once with one request in flight (a relay
//! renewing as heartbeats arrive) and once pipelining 32 at a time (the
//! best case for batching). The store runs the same renewals on the same
//! number of threads. Keys live under `relaystore-bench:<pid>:` and are
//! deleted afterwards; nothing else in the database is touched.
//!
//! ```text
//! REDIS_URL=redis://127.0.0.1:6379 cargo run --release --example redis_renew
//! REDIS_URL=... cargo run --release --example redis_renew -- --sessions 100000 --seconds 5 --threads 2
//! ```

#[path = "support/mod.rs"]
mod support;

use relaystore::time::SystemClock;
use relaystore::{Store, TenantId};
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::{options, Options};

const TTL: Duration = Duration::from_secs(600);
const HOLDER: &str = "host-0123456789a";
const PIPELINE: usize = 32;
const RENEW: &str = "if redis.call('GET', KEYS[1]) == ARGV[2] then \
    return redis.call('PEXPIRE', KEYS[1], ARGV[1]) else return 0 end";

/// One reply, as far as this client needs to read it.
#[derive(Debug, PartialEq)]
enum Reply {
    Ok(String),
    Int(i64),
    Bulk(Option<Vec<u8>>),
    Array(Vec<Reply>),
}

/// A minimal RESP2 connection: commands out, replies in.
struct Conn {
    reader: BufReader<TcpStream>,
    writer: BufWriter<TcpStream>,
}

impl Conn {
    fn open(url: &str) -> Result<Self, String> {
        let rest = url
            .strip_prefix("redis://")
            .ok_or("REDIS_URL must start with redis://")?;
        let (auth, rest) = match rest.rsplit_once('@') {
            Some((auth, rest)) => (Some(auth.trim_start_matches(':')), rest),
            None => (None, rest),
        };
        let (addr, db) = match rest.split_once('/') {
            Some((addr, db)) if !db.is_empty() => (addr, Some(db)),
            Some((addr, _)) => (addr, None),
            None => (rest, None),
        };
        let stream = TcpStream::connect(addr).map_err(|e| format!("connect {addr}: {e}"))?;
        stream.set_nodelay(true).map_err(|e| e.to_string())?;
        let mut conn = Conn {
            reader: BufReader::new(stream.try_clone().map_err(|e| e.to_string())?),
            writer: BufWriter::new(stream),
        };
        if let Some(password) = auth {
            conn.call(&[b"AUTH", password.as_bytes()])?;
        }
        if let Some(db) = db {
            conn.call(&[b"SELECT", db.as_bytes()])?;
        }
        Ok(conn)
    }

    fn send(&mut self, args: &[&[u8]]) -> Result<(), String> {
        let w = &mut self.writer;
        let io = |e: std::io::Error| e.to_string();
        write!(w, "*{}\r\n", args.len()).map_err(io)?;
        for a in args {
            write!(w, "${}\r\n", a.len()).map_err(io)?;
            w.write_all(a).map_err(io)?;
            w.write_all(b"\r\n").map_err(io)?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), String> {
        self.writer.flush().map_err(|e| e.to_string())
    }

    fn read(&mut self) -> Result<Reply, String> {
        let mut line = String::new();
        self.reader
            .read_line(&mut line)
            .map_err(|e| e.to_string())?;
        let line = line.trim_end_matches("\r\n");
        let (kind, body) = line.split_at_checked(1).ok_or("connection closed")?;
        let number = || {
            body.parse::<i64>()
                .map_err(|e| format!("bad reply {line}: {e}"))
        };
        match kind {
            "+" => Ok(Reply::Ok(body.to_owned())),
            "-" => Err(format!("redis error: {body}")),
            ":" => Ok(Reply::Int(number()?)),
            "$" => {
                let Ok(len) = usize::try_from(number()?) else {
                    return Ok(Reply::Bulk(None));
                };
                let mut buf = vec![0; len + 2];
                self.reader
                    .read_exact(&mut buf)
                    .map_err(|e| e.to_string())?;
                buf.truncate(len);
                Ok(Reply::Bulk(Some(buf)))
            }
            "*" => {
                let n = usize::try_from(number()?).unwrap_or(0);
                (0..n)
                    .map(|_| self.read())
                    .collect::<Result<_, _>>()
                    .map(Reply::Array)
            }
            _ => Err(format!("unexpected reply {line}")),
        }
    }

    fn call(&mut self, args: &[&[u8]]) -> Result<Reply, String> {
        self.send(args)?;
        self.flush()?;
        self.read()
    }
}

fn key(prefix: &str, i: u64) -> String {
    format!("{prefix}{i}")
}

/// Renewals per second over `seconds` on `threads` threads; `renew(t, i)`
/// renews `batch` leases starting at pseudo-random index `i` and returns
/// how many it renewed.
fn run(
    threads: usize,
    seconds: u64,
    renew: impl Fn(usize, u64) -> Result<u64, String> + Send + Sync,
) -> Result<f64, String> {
    let until = Instant::now() + Duration::from_secs(seconds);
    let start = Instant::now();
    let total: Result<u64, String> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let renew = &renew;
                s.spawn(move || {
                    let (mut done, mut i) = (0, 0u64);
                    // The clock is read once per 64 steps, not per renewal.
                    while Instant::now() < until {
                        for _ in 0..64 {
                            done += renew(t, i)?;
                            i += 1;
                        }
                    }
                    Ok::<u64, String>(done)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).sum()
    });
    Ok(total? as f64 / start.elapsed().as_secs_f64())
}

/// A well-spread index for step `i` of thread `t`.
fn pick(t: usize, i: u64, n: u64) -> u64 {
    let mut z = (i ^ ((t as u64) << 48)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z ^= z >> 29;
    z % n
}

fn main() -> Result<(), String> {
    let o = options(
        Options::plain(100_000, 5, 2),
        "usage: redis_renew [--sessions N] [--seconds S] [--threads T] (with REDIS_URL set)",
    );
    let Ok(url) = std::env::var("REDIS_URL") else {
        println!("REDIS_URL is not set; nothing to compare against (see the file's docs)");
        return Ok(());
    };
    let n = o.sessions;
    let prefix = format!("relaystore-bench:{}:", std::process::id());
    let ttl_ms = TTL.as_millis().to_string();

    // Redis: n leases, the renew script, one connection per thread.
    let mut admin = Conn::open(&url)?;
    for chunk in (0..n).collect::<Vec<_>>().chunks(1000) {
        for &i in chunk {
            let k = key(&prefix, i);
            admin.send(&[
                b"SET",
                k.as_bytes(),
                HOLDER.as_bytes(),
                b"PX",
                ttl_ms.as_bytes(),
            ])?;
        }
        admin.flush()?;
        for _ in chunk {
            if admin.read()? != Reply::Ok("OK".into()) {
                return Err("SET refused".into());
            }
        }
    }
    let Reply::Bulk(Some(sha)) = admin.call(&[b"SCRIPT", b"LOAD", RENEW.as_bytes()])? else {
        return Err("SCRIPT LOAD gave no digest".into());
    };
    let conns: Vec<_> = (0..o.threads)
        .map(|_| Conn::open(&url).map(std::sync::Mutex::new))
        .collect::<Result<_, _>>()?;
    let redis = |depth: usize| {
        run(o.threads, o.seconds, |t, i| {
            let mut c = conns[t].lock().unwrap();
            for j in 0..depth as u64 {
                let k = key(&prefix, pick(t, i * depth as u64 + j, n));
                c.send(&[
                    b"EVALSHA",
                    &sha,
                    b"1",
                    k.as_bytes(),
                    ttl_ms.as_bytes(),
                    HOLDER.as_bytes(),
                ])?;
            }
            c.flush()?;
            for _ in 0..depth {
                if c.read()? != Reply::Int(1) {
                    return Err("a renewal was refused".into());
                }
            }
            Ok(depth as u64)
        })
    };
    println!(
        "lease renew, {n} live leases, {} threads, {} s each",
        o.threads, o.seconds
    );
    let redis_one = redis(1)?;
    println!(
        "  redis, one request in flight   {:>12.0} renewals/s",
        redis_one
    );
    let redis_pipe = redis(PIPELINE)?;
    println!(
        "  redis, pipelined by {PIPELINE:<2}         {:>12.0} renewals/s",
        redis_pipe
    );

    // The embedded store: the same leases and renewals.
    let config = support::room_for_leases(n);
    let store = Store::new(config, Arc::new(SystemClock::new())).map_err(|e| e.to_string())?;
    let t = TenantId(1);
    let leases: Vec<_> = (0..n)
        .map(|_| store.grant(t, HOLDER, TTL, None).map(|g| g.id))
        .collect::<Result<_, _>>()
        .map_err(|e| e.to_string())?;
    let store_rate = run(o.threads, o.seconds, |th, i| {
        let id = leases[pick(th, i, n) as usize];
        store.renew(t, id, TTL).map_err(|e| e.to_string())?;
        Ok(1)
    })?;
    println!(
        "  relaystore::Store::renew        {:>12.0} renewals/s",
        store_rate
    );
    println!(
        "  store / redis: {:.1}x one in flight, {:.1}x pipelined",
        store_rate / redis_one,
        store_rate / redis_pipe
    );

    for chunk in (0..n).collect::<Vec<_>>().chunks(1000) {
        let keys: Vec<String> = chunk.iter().map(|&i| key(&prefix, i)).collect();
        let mut args: Vec<&[u8]> = vec![b"DEL"];
        args.extend(keys.iter().map(|k| k.as_bytes()));
        admin.call(&args)?;
    }
    Ok(())
}
