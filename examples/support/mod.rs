//! Shared by the capacity examples: command-line options and a latency
//! histogram.
#![allow(dead_code)]

/// `--sessions N --seconds S --threads T`.
pub struct Options {
    pub sessions: u64,
    pub seconds: u64,
    pub threads: usize,
}

/// Parses the command line over `defaults`; every value must be positive.
pub fn options(defaults: Options) -> Result<Options, String> {
    let mut o = defaults;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next().ok_or(format!("{flag} needs a value"))?;
        let parse = |v: &str| v.parse::<u64>().map_err(|e| format!("{flag}: {e}"));
        match flag.as_str() {
            "--sessions" => o.sessions = parse(&value)?,
            "--seconds" => o.seconds = parse(&value)?,
            "--threads" => o.threads = parse(&value)? as usize,
            _ => return Err(format!("unknown option {flag}")),
        }
    }
    if o.sessions == 0 || o.seconds == 0 || o.threads == 0 {
        return Err("sessions, seconds and threads must be positive".into());
    }
    Ok(o)
}

/// Log-linear latency histogram: 8 sub-buckets per power of two (~12%).
pub struct Histogram(Vec<u64>);

impl Histogram {
    pub fn new() -> Self {
        Histogram(vec![0; 64 * 8])
    }

    pub fn record(&mut self, ns: u64) {
        let ns = ns.max(1);
        let exp = 63 - ns.leading_zeros() as usize;
        let sub = if exp >= 3 {
            (ns >> (exp - 3)) as usize & 7
        } else {
            0
        };
        self.0[exp * 8 + sub] += 1;
    }

    pub fn merge(&mut self, other: &Histogram) {
        self.0.iter_mut().zip(&other.0).for_each(|(a, b)| *a += b);
    }

    pub fn count(&self) -> u64 {
        self.0.iter().sum()
    }

    /// The upper edge of the bucket holding quantile `q`.
    pub fn quantile(&self, q: f64) -> u64 {
        let target = ((self.count() as f64) * q).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (i, &n) in self.0.iter().enumerate() {
            seen += n;
            if seen >= target {
                let (exp, sub) = (i / 8, i % 8);
                return if exp >= 3 {
                    ((8 + sub as u64 + 1) << (exp - 3)) - 1
                } else {
                    1 << exp
                };
            }
        }
        0
    }
}
