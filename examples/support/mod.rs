//! Shared by the capacity examples: command-line options, a latency
//! histogram, and the process's CPU time and peak resident set.
#![allow(dead_code)]

pub mod http;

/// `--sessions N --seconds S --threads T`; `--json PATH` where the
/// example writes a report, `--open-loop RATE` where it can offer a
/// fixed rate, and `--engine NAME` where it runs on more than one engine
/// (`Some(..)` in the defaults says the example accepts them; parsed,
/// `json` and `open_loop` are `None` unless given, and `engine` keeps its
/// default). `baseline` is a flag without a value: `Some(false)` in the
/// defaults says the example accepts `--baseline`, and parsed it is
/// `Some(true)` when given.
pub struct Options {
    pub sessions: u64,
    pub seconds: u64,
    pub threads: usize,
    pub json: Option<String>,
    pub open_loop: Option<u64>,
    pub engine: Option<String>,
    pub baseline: Option<bool>,
    /// Seconds of TTL a hosted member's first heartbeat carries (the
    /// capacity run's `--host-ttl`; `None` if not given, and in the
    /// defaults if not an option of the example).
    pub host_ttl: Option<u64>,
    /// The capacity run's `--mix` (its traffic per session per second),
    /// as given: `None` if not given, and in the defaults if not an
    /// option of the example.
    pub mix: Option<String>,
}

impl Options {
    /// Defaults for an example without a JSON report.
    pub fn plain(sessions: u64, seconds: u64, threads: usize) -> Self {
        Options {
            sessions,
            seconds,
            threads,
            json: None,
            open_loop: None,
            engine: None,
            baseline: None,
            host_ttl: None,
            mix: None,
        }
    }
}

/// Parses the command line over `defaults`; every value must be positive.
/// `--help` prints `usage` and exits 0; a bad command line prints what is
/// wrong and `usage`, and exits 2.
pub fn options(defaults: Options, usage: &str) -> Options {
    if std::env::args().skip(1).any(|a| a == "--help" || a == "-h") {
        println!("{usage}");
        std::process::exit(0);
    }
    parse_options(defaults).unwrap_or_else(|e| {
        eprintln!("error: {e}\n\n{usage}");
        std::process::exit(2);
    })
}

fn parse_options(defaults: Options) -> Result<Options, String> {
    let json = defaults.json.is_some();
    let open_loop = defaults.open_loop.is_some();
    let engine = defaults.engine.is_some();
    let host_ttl = defaults.host_ttl.is_some();
    let mix = defaults.mix.is_some();
    let mut o = Options {
        json: None,
        open_loop: None,
        host_ttl: None,
        mix: None,
        ..defaults
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        if flag == "--baseline" && o.baseline.is_some() {
            o.baseline = Some(true);
            continue;
        }
        let known = matches!(flag.as_str(), "--sessions" | "--seconds" | "--threads")
            || (json && flag == "--json")
            || (open_loop && flag == "--open-loop")
            || (engine && flag == "--engine")
            || (host_ttl && flag == "--host-ttl")
            || (mix && flag == "--mix");
        if !known {
            return Err(format!("unknown option {flag:?}"));
        }
        let value = args.next().ok_or(format!("{flag} needs a value"))?;
        let parse = |v: &str| v.parse::<u64>().map_err(|e| format!("{flag}: {e}"));
        match flag.as_str() {
            "--sessions" => o.sessions = parse(&value)?,
            "--seconds" => o.seconds = parse(&value)?,
            "--json" => o.json = Some(value),
            "--mix" => o.mix = Some(value),
            "--engine" => o.engine = Some(value),
            "--host-ttl" => match parse(&value)? {
                0 => return Err("--host-ttl SECONDS must be positive".into()),
                ttl => o.host_ttl = Some(ttl),
            },
            "--open-loop" => match parse(&value)? {
                0 => return Err("--open-loop RATE must be positive".into()),
                rate => o.open_loop = Some(rate),
            },
            _ => o.threads = parse(&value)? as usize,
        }
    }
    if o.sessions == 0 || o.seconds == 0 || o.threads == 0 {
        return Err("sessions, seconds and threads must be positive".into());
    }
    Ok(o)
}

/// A latency histogram in nanoseconds (hdrhistogram, 3 significant
/// digits, from 1 ns to 100 s; longer values count as 100 s).
pub struct Histogram(hdrhistogram::Histogram<u64>);

impl Histogram {
    pub fn new() -> Self {
        let max = 100_000_000_000;
        Histogram(hdrhistogram::Histogram::new_with_bounds(1, max, 3).expect("valid bounds"))
    }

    pub fn record(&mut self, ns: u64) {
        self.0.saturating_record(ns.max(1));
    }

    pub fn merge(&mut self, other: &Histogram) {
        self.0.add(&other.0).expect("histograms of one precision");
    }

    pub fn count(&self) -> u64 {
        self.0.len()
    }

    /// The value at quantile `q` (0 when empty).
    pub fn quantile(&self, q: f64) -> u64 {
        self.0.value_at_quantile(q)
    }
}

/// Nanoseconds as microseconds with three significant digits.
pub fn micros(ns: u64) -> String {
    let us = ns as f64 / 1e3;
    match us {
        u if u >= 100.0 => format!("{u:.0}"),
        u if u >= 10.0 => format!("{u:.1}"),
        u => format!("{u:.2}"),
    }
}

/// CPU time this process has used so far (user + system, every thread),
/// from `/proc/self/stat` (Linux; in the kernel's fixed 100 Hz user ticks).
/// `None` where that file is not available.
pub fn cpu_time() -> Option<std::time::Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name (field 2) may hold spaces: count from after it.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // Fields 14 and 15 of the file (utime, stime) are 11 and 12 here.
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(std::time::Duration::from_millis(ticks * 10))
}

/// The process's peak resident set in bytes (`VmHWM` of
/// `/proc/self/status`; Linux), if known.
pub fn max_resident_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// The default limits with room for `2n` leases, store-wide and for one
/// tenant.
pub fn room_for_leases(n: u64) -> relaystore::StoreConfig {
    relaystore::StoreConfig::default()
        .leases_max(n * 2)
        .tenant(relaystore::TenantQuota::default().leases_max(n * 2))
}
