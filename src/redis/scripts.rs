//! The engine's server-side code: one Redis Functions library
//! (`FUNCTION LOAD`), the shared part (`lua/shared/*.lua`, in the order of
//! their names) followed by one registered function per transition, each
//! body in its own `lua/*.lua` (both lists are generated from those files
//! by `build.rs`).
//! A library is loaded once per server, so the helpers it defines are made
//! once rather than on every call (as a script sent by `EVALSHA` would).
//!
//! The library's name carries a hash of its code, and so do its
//! functions' names, so relay instances running different versions of this
//! crate each call their own code on a shared Redis.

use std::sync::LazyLock;

/// One registered function: an index into [`FUNCTIONS`].
#[derive(Copy, Clone)]
pub(super) struct Function(usize);

/// What a function is: per tenant (run inside `begin` and `finish`) or
/// not, and whether it may write.
#[derive(Copy, Clone, PartialEq, Eq)]
enum Kind {
    /// On the meta slot.
    Meta,
    /// Per tenant, and it may write (and so take or give back room under
    /// the store-wide ceilings).
    Tenant,
    /// Per tenant, reads only: flagged `no-writes`, so Redis runs it on a
    /// server at `maxmemory`.
    Read,
    /// Per tenant, a removal: it frees more than it writes, so it is
    /// flagged `allow-oom` and runs on a server at `maxmemory`, where a
    /// relay frees memory by revoking.
    Frees,
}
use Kind::{Frees, Meta, Read, Tenant};

macro_rules! functions {
    ($($name:ident = $op:literal, $file:literal, $kind:expr, $replicated:literal, [$($arg:literal),*];)*) => {
        #[allow(non_camel_case_types, clippy::upper_case_acronyms)]
        enum Index { $($name),* }
        $(pub(super) const $name: Function = Function(Index::$name as usize);)*
        /// (operation, body, kind, replicated, its arguments' names if it
        /// names them) of every function.
        const FUNCTIONS: &[(&str, &str, Kind, bool, &[&str])] = &[
            $(($op, include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/redis/lua/", $file)), $kind, $replicated, &[$($arg),*])),*
        ];
    };
}

/// One argument of a function, as its text: a name or bytes as they are,
/// a number in decimal, a flag as `1` or `0`.
pub(super) struct Arg(pub(super) Vec<u8>);

impl From<&str> for Arg {
    fn from(text: &str) -> Self {
        Arg(text.as_bytes().to_vec())
    }
}

impl From<String> for Arg {
    fn from(text: String) -> Self {
        Arg(text.into_bytes())
    }
}

impl From<&[u8]> for Arg {
    fn from(bytes: &[u8]) -> Self {
        Arg(bytes.to_vec())
    }
}

impl From<u64> for Arg {
    fn from(n: u64) -> Self {
        Arg(n.to_string().into_bytes())
    }
}

impl From<usize> for Arg {
    fn from(n: usize) -> Self {
        Arg(n.to_string().into_bytes())
    }
}

impl From<bool> for Arg {
    fn from(flag: bool) -> Self {
        Arg(vec![if flag { b'1' } else { b'0' }])
    }
}

// The list, one line per file of `lua/`, each named by its file and of
// the kind its first line says; and `SHARED`, the files of `lua/shared/`
// (`build.rs`).
include!(concat!(env!("OUT_DIR"), "/functions.rs"));

/// The library: its code and the names its functions are called by.
pub(super) struct Library {
    pub(super) code: String,
    names: Vec<String>,
}

impl Function {
    /// The name to `FCALL`.
    pub(super) fn name(self) -> &'static str {
        &LIBRARY.names[self.0]
    }

    /// Whether an authorization rests on its write, so that with
    /// `wait_replicas` set its success waits for the replicas.
    pub(super) fn replicated(self) -> bool {
        FUNCTIONS[self.0].3
    }

    pub(super) fn op(self) -> &'static str {
        FUNCTIONS[self.0].0
    }

    /// Whether it only reads (so it needs nothing outside its slot).
    pub(super) fn reads_only(self) -> bool {
        FUNCTIONS[self.0].2 == Read
    }
}

const NAME: &str = "@LIBRARY@";

pub(super) static LIBRARY: LazyLock<Library> = LazyLock::new(|| {
    let mut code = SHARED
        .iter()
        .map(|(_, text)| *text)
        .collect::<Vec<_>>()
        .join("\n")
        .replace("@LAPSED@", crate::contract::names::LAPSED)
        .replace("@REPLY_CODES@", &super::reply::codes_lua())
        .replace("@EVENT_LETTERS@", &super::codes::event_letters_lua())
        .replace("@SCOPES@", &super::codes::scopes_lua());
    // A per-tenant body is an entry of `OPS`, so that a transaction
    // (`lua/tx.lua`) runs several in one call.
    for (op, body, kind, _, names) in FUNCTIONS {
        if *kind != Meta {
            let names = locals(names, 3);
            code.push_str(&format!("\nOPS['{op}'] = function()\n{names}{body}end\n"));
        }
    }
    for (op, body, kind, _, names) in FUNCTIONS {
        // A per-tenant body runs inside `begin` and `finish` (the reply
        // and the removal events it caused); the others as they are.
        let wrapped = if *kind != Meta {
            format!(
                "  local early = begin(keys, args)\n  if early then\n    return {{early}}\n  end\n  \
                 return finish(OPS['{op}']())\n"
            )
        } else {
            format!(
                "  KEYS, ARGV, JOURNAL, DEFERRED = keys, args, nil, nil\n{}{body}",
                locals(names, 1)
            )
        };
        // A function that only reads is flagged `no-writes` (Redis refuses
        // any write in it), a removal `allow-oom`: Redis runs both on a
        // server at `maxmemory`, where it refuses every other function.
        let flags = match kind {
            Read => "'no-writes'",
            Frees => "'allow-oom'",
            Meta | Tenant => "",
        };
        code.push_str(&format!(
            "\nredis.register_function{{function_name = '{NAME}_{op}', flags = {{{flags}}}, \
             callback = function(keys, args)\n{wrapped}end}}\n"
        ));
    }
    let library = format!("relaystore_{:016x}", fnv1a(&code));
    Library {
        code: format!("#!lua name={library}\n{}", code.replace(NAME, &library)),
        names: FUNCTIONS
            .iter()
            .map(|(op, ..)| format!("{library}_{op}"))
            .collect(),
    }
});

/// The Lua lines that give a function's named arguments their names, the
/// first at `ARGV[first]` (a per-tenant function's own arguments start at
/// 3: `begin` reads the first two); a last `...name` gets every argument
/// from its place on, as a table.
fn locals(names: &[&str], first: usize) -> String {
    let (fixed, rest) = match names.last().and_then(|n| n.strip_prefix("...")) {
        Some(rest) => (&names[..names.len() - 1], Some(rest)),
        None => (names, None),
    };
    let mut out = String::new();
    if !fixed.is_empty() {
        let at: Vec<String> = (first..)
            .take(fixed.len())
            .map(|i| format!("ARGV[{i}]"))
            .collect();
        out = format!("local {} = {}\n", fixed.join(", "), at.join(", "));
    }
    // A list: every argument from there on (copied one by one: `unpack`
    // stops at Lua's stack limit, a few thousand values).
    if let Some(rest) = rest {
        out.push_str(&format!(
            "local {rest} = {{}}\nfor i = {}, #ARGV do\n  {rest}[#{rest} + 1] = ARGV[i]\nend\n",
            first + fixed.len()
        ));
    }
    out
}

/// FNV-1a: a stable hash of the code (the same in every process).
fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::super::codes::{collection_of, event_letters_lua};
    use super::*;

    /// The `.lua` files of `dir`, with their text.
    fn lua_files(dir: &str) -> Vec<(String, String)> {
        let dir = format!("{}/src/redis/lua/{dir}", env!("CARGO_MANIFEST_DIR"));
        let mut files: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "lua"))
            .map(|p| {
                let text = std::fs::read_to_string(&p).unwrap();
                (p.file_name().unwrap().to_str().unwrap().to_owned(), text)
            })
            .collect();
        files.sort();
        files
    }

    /// Every file of `lua/` is one function, and the authorizations whose
    /// success waits for replicas are these seven.
    #[test]
    fn each_lua_file_is_one_function_of_the_kind_its_first_line_says() {
        assert_eq!(FUNCTIONS.len(), lua_files("").len());
        let replicated: Vec<&str> = FUNCTIONS.iter().filter(|f| f.3).map(|f| f.0).collect();
        let authorizations = [
            "bind",
            "consume",
            "grant",
            "renew_lock",
            "revoke",
            "revoke_tenant",
            "try_lock",
        ];
        assert_eq!(replicated, authorizations);
        assert!(READ_STREAM.reads_only() && !GRANT.reads_only());
        assert!(GRANT.replicated() && !GET_LEASE.replicated());
        for (op, body, ..) in FUNCTIONS {
            assert!(body.starts_with("-- function: "), "{op}");
        }
    }

    /// A function that names its arguments reads none by position, and
    /// its body gets them as locals from `ARGV[3]` on (from `ARGV[1]` on a
    /// meta function), in the order of its type's fields; every function
    /// but the transaction that reads arguments names them.
    #[test]
    fn a_function_that_names_its_arguments_reads_none_by_position() {
        let mut named = 0;
        for (op, body, kind, _, names) in FUNCTIONS {
            if names.is_empty() {
                // Only the transaction, whose arguments frame other
                // functions' arguments, reads them by position.
                assert!(
                    *op == "tx" || !body.contains("ARGV"),
                    "{op} reads arguments it does not name"
                );
                continue;
            }
            named += 1;
            assert!(
                !body.contains("ARGV["),
                "{op} reads an argument by position"
            );
            let first = if *kind == Meta { 1 } else { 3 };
            let line = locals(names, first);
            assert!(LIBRARY.code.contains(&format!("{line}{body}")), "{op}");
        }
        assert!(named >= 79, "{named} functions name their arguments");
        assert_eq!(locals(&["a", "b"], 3), "local a, b = ARGV[3], ARGV[4]\n");
        assert_eq!(
            locals(&["a", "...more"], 3),
            "local a = ARGV[3]\nlocal more = {}\nfor i = 4, #ARGV do\n  more[#more + 1] = ARGV[i]\nend\n"
        );
        let args = HeartbeatArgs {
            member: "m".into(),
            ttl: 15_000u64.into(),
            has_attrs: true.into(),
            attrs: b"x".as_slice().into(),
            lease: String::new().into(),
            per_lease_max: 4u64.into(),
            quota: "-1".into(),
            keep: 1_000u64.into(),
            draining: false.into(),
        };
        let encoded: Vec<Vec<u8>> = ["m", "15000", "1", "x", "", "4", "-1", "1000", "0"]
            .map(|a| a.as_bytes().to_vec())
            .to_vec();
        assert_eq!(args.encode(), encoded);
    }

    /// The values of a Lua table constructor's top level: `{OK, f(a, b),
    /// t[1]}` has three.
    fn top_level_values(table: &str) -> usize {
        let inner = &table[1..table.len() - 1];
        let (mut depth, mut values) = (0i32, 1);
        let mut quoted = None;
        for c in inner.chars() {
            match (quoted, c) {
                (Some(q), c) if c == q => quoted = None,
                (Some(_), _) => {}
                (None, '\'' | '"') => quoted = Some(c),
                (None, '(' | '[' | '{') => depth += 1,
                (None, ')' | ']' | '}') => depth -= 1,
                (None, ',') if depth == 0 => values += 1,
                _ => {}
            }
        }
        values
    }

    /// A function that types its reply (`-- reply: ...`, whose Rust side
    /// `<Op>Reply::decode` reads exactly those values) returns that many
    /// after `OK` from every `return {OK, ...}` of its body (a reply built
    /// up in a table or by a shared helper is held to its length by the
    /// decoding alone, which the engine's tests run); and the decoding
    /// refuses a reply of another length.
    #[test]
    fn a_typed_replys_returns_have_its_values() {
        let mut typed = 0;
        for (op, body, ..) in FUNCTIONS {
            let Some(line) = body
                .lines()
                .take(3)
                .find_map(|l| l.strip_prefix("-- reply: "))
            else {
                continue;
            };
            typed += 1;
            if line.starts_with("each: ") || line.contains("; each: ") {
                continue;
            }
            let values = line.split(", ").filter(|f| !f.is_empty()).count();
            let mut returns = 0;
            let mut lines = body.lines().map(str::trim);
            while let Some(l) = lines.next() {
                let Some(start) = l.strip_prefix("return {OK") else {
                    continue;
                };
                // The table, with the lines it continues on.
                let mut table = format!("{{OK{start}");
                while table.matches('{').count() > table.matches('}').count() {
                    table.push(' ');
                    table.push_str(lines.next().unwrap_or("}"));
                }
                returns += 1;
                assert_eq!(top_level_values(&table), values + 1, "{op}: {table}");
            }
            // A reply built up in a table, or made by a shared helper, is
            // checked by its decoding only.
            let elsewhere = body
                .lines()
                .map(str::trim)
                .any(|l| l == "return out" || (l.starts_with("return ") && l.ends_with(')')));
            assert!(
                returns > 0 || elsewhere,
                "{op} types a reply it never returns"
            );
        }
        assert!(typed >= 20, "{typed} functions type their replies");
        assert_eq!(top_level_values("{OK, f(a, b), t[1], 'x,y'}"), 4);
        let short =
            super::super::reply::Reply::new(vec![redis::Value::Int(0), redis::Value::Int(7)])
                .unwrap();
        assert_eq!(BindReply::decode(&short).map(|r| r.version).ok(), Some(7));
        let long = super::super::reply::Reply::new(vec![
            redis::Value::Int(0),
            redis::Value::Int(7),
            redis::Value::Int(8),
        ])
        .unwrap();
        assert!(BindReply::decode(&long).is_err(), "a value too many");
    }

    /// The shared part is every file of `lua/shared/`, in name order, and
    /// no file of the library is over 400 lines: a file owns one
    /// mechanism or one operation family, and a successor reads it whole.
    #[test]
    fn the_library_is_its_files_each_of_at_most_400_lines() {
        let shared = lua_files("shared");
        let names: Vec<&str> = SHARED.iter().map(|(name, _)| *name).collect();
        let files: Vec<&str> = shared.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(names, files);
        assert!(shared.len() >= 10, "{files:?}");
        let mut at = 0;
        for (name, text) in &shared {
            let start = text.lines().next().unwrap_or_default();
            at += LIBRARY.code[at..]
                .find(start)
                .unwrap_or_else(|| panic!("{name} is not in the library after its predecessor"));
        }
        for (name, text) in shared.iter().chain(&lua_files("")) {
            let lines = text.lines().count();
            assert!(lines <= 400, "{name} is {lines} lines");
        }
    }

    /// The library is one Lua chunk, and Lua refuses a chunk with more
    /// than 200 locals in scope at once (the server answers "main
    /// function has more than 200 local variables" and loads nothing).
    /// The shared part's chunk-level locals are the lines that start with
    /// `local` (a block's are indented), with its headers'; function
    /// bodies' locals are their own.
    #[test]
    fn the_library_stays_under_luas_200_locals() {
        let headers = [
            super::super::reply::codes_lua(),
            event_letters_lua(),
            super::super::codes::scopes_lua(),
        ];
        let texts = SHARED
            .iter()
            .map(|(_, text)| (*text).to_owned())
            .chain(headers);
        let mut count = 0;
        for text in texts {
            for line in text.lines() {
                let Some(rest) = line.strip_prefix("local ") else {
                    continue;
                };
                count += match rest.strip_prefix("function ") {
                    Some(_) => 1,
                    None => rest
                        .split('=')
                        .next()
                        .unwrap_or_default()
                        .split(',')
                        .count(),
                };
            }
        }
        assert!(count <= 200, "{count} locals in the library's chunk");
        assert!(count >= 150, "the count missed the locals: {count}");
        eprintln!("{count} of 200 locals");
    }

    /// The library holds the reply codes' header and uses no bare number
    /// in a code's place (`{INVALID, 2}`).
    #[test]
    fn the_library_reads_reply_codes_by_name() {
        let library = &LIBRARY.code;
        assert!(library.contains(&super::super::reply::codes_lua()));
        for digit in 0..10 {
            let bare = format!("{{INVALID, {digit}");
            assert!(!library.contains(&bare), "{bare}");
        }
    }

    /// The library names a collection's room by its letter (`rooms({{'m',
    /// ..}})`, `room.m`): every letter it uses so is one of this table's.
    #[test]
    fn the_library_uses_only_these_letters_for_room() {
        let library = &LIBRARY.code;
        let mut seen = 0;
        for (at, _) in library.match_indices("rooms({{'") {
            let l = library.as_bytes()[at + "rooms({{'".len()];
            assert!(
                collection_of(l).is_some(),
                "rooms() with letter {:?}",
                l as char
            );
            seen += 1;
        }
        for (at, _) in library.match_indices("room.") {
            let l = library.as_bytes()[at + "room.".len()];
            if l.is_ascii_lowercase()
                && !library.as_bytes()[at + "room.".len() + 1].is_ascii_alphanumeric()
            {
                assert!(collection_of(l).is_some(), "room.{}", l as char);
                seen += 1;
            }
        }
        assert!(
            seen >= 8,
            "the library's room letters were not found ({seen})"
        );
        assert!(library.contains(&event_letters_lua()));
    }
}
