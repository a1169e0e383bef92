//! Generates the Redis engine's library lists from `src/redis/lua/`.
//!
//! Every `.lua` file there is one function, named by its file, whose
//! first line says what it is:
//!
//! ```text
//! -- function: tenant | read | frees | meta [, replicated]
//! ```
//!
//! A second line `-- arguments: a, b, c` names its arguments: the body
//! reads them as locals of those names, and the engine passes them as
//! the fields of a generated `<Op>Args` type, so neither side counts
//! positions. The last name may be `...name`: the arguments from there
//! on, a list (`Vec<Arg>` in Rust, a table in Lua). So a new function is a new file, and nothing else lists it. The
//! library's shared part is the files of `lua/shared/`, in the order of
//! their names.
//!
//! A line `-- reply: version uint, remaining millis` among its first
//! three names and types the values of its `OK` reply after the code
//! (`uint`, `int`, `text`, `bytes`, `attrs`, `millis`); `each: a text,
//! b uint` (after them, `; each: ...`) names the values of rows repeated
//! to the end. It
//! gets a Rust type `<Op>Reply` (rows: `<Op>Row`) that decodes a reply
//! by those names, so the engine reads no reply by position. Both lists land in `$OUT_DIR/functions.rs`, which
//! `src/redis/scripts.rs` includes; a function's file without that line
//! stops the build.

use std::fmt::Write as _;
use std::path::Path;

fn main() {
    let dir = Path::new("src/redis/lua");
    println!("cargo:rerun-if-changed={}", dir.display());
    let files = lua_files(dir);
    let mut rows = String::new();
    let mut types = String::new();
    for path in &files {
        let op = path
            .file_stem()
            .and_then(|s| s.to_str())
            .expect("a UTF-8 file name");
        assert!(
            op.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
            "{}: a function's file is named in lower case and underscores",
            path.display()
        );
        let text = std::fs::read_to_string(path).expect("a readable Lua file");
        let first = text.lines().next().unwrap_or_default();
        let Some(what) = first.strip_prefix("-- function: ") else {
            panic!(
                "{}: the first line is not `-- function: <kind>`",
                path.display()
            );
        };
        let mut parts = what.split(", ");
        let kind = match parts.next() {
            Some("tenant") => "Tenant",
            Some("read") => "Read",
            Some("frees") => "Frees",
            Some("meta") => "Meta",
            other => panic!("{}: unknown kind {other:?}", path.display()),
        };
        let replicated = match parts.next() {
            None => false,
            Some("replicated") => true,
            Some(other) => panic!("{}: unknown flag {other:?}", path.display()),
        };
        // A function that names its arguments (`-- arguments: a, b`, the
        // second line) gets a Rust type with a field per name, and its
        // body those names as locals.
        let names: Vec<&str> = text
            .lines()
            .nth(1)
            .and_then(|l| l.strip_prefix("-- arguments: "))
            .map(|l| l.split(", ").collect())
            .unwrap_or_default();
        for (i, name) in names.iter().enumerate() {
            // The last may be `...name`: every argument from there on, as a
            // list.
            let name = match name.strip_prefix("...") {
                Some(rest) if i + 1 == names.len() => rest,
                _ => name,
            };
            assert!(
                name.bytes().next().is_some_and(|b| b.is_ascii_lowercase())
                    && name
                        .bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'),
                "{}: an argument's name is a Lua name in lower case: {name:?}",
                path.display()
            );
        }
        writeln!(
            rows,
            "    {} = \"{op}\", \"{op}.lua\", {kind}, {replicated}, [{}];",
            op.to_uppercase(),
            names
                .iter()
                .map(|n| format!("\"{n}\""))
                .collect::<Vec<_>>()
                .join(", ")
        )
        .expect("writing to a string");
        let camel: String = op
            .split('_')
            .map(|w| w[..1].to_uppercase() + &w[1..])
            .collect();
        if let Some(line) = text
            .lines()
            .take(3)
            .find_map(|l| l.strip_prefix("-- reply: "))
        {
            reply_type(&mut types, op, &camel, line, path);
        }
        if !names.is_empty() {
            let (fixed, rest) = match names.last().and_then(|n| n.strip_prefix("...")) {
                Some(rest) => (&names[..names.len() - 1], Some(rest)),
                None => (&names[..], None),
            };
            let fields: String = fixed
                .iter()
                .map(|n| format!("    pub(in crate::redis) {n}: Arg,\n"))
                .chain(rest.map(|n| format!("    pub(in crate::redis) {n}: Vec<Arg>,\n")))
                .collect();
            let encoded: Vec<String> = fixed.iter().map(|n| format!("self.{n}.0")).collect();
            let tail = rest.map_or(String::new(), |n| {
                format!("\n        out.extend(self.{n}.into_iter().map(|a| a.0));")
            });
            writeln!(
                types,
                "/// The arguments of `{op}` (`lua/{op}.lua`), by the names its body\n\
                 /// reads them by.\n\
                 pub(in crate::redis) struct {camel}Args {{\n{fields}}}\n\n\
                 impl {camel}Args {{\n    \
                 /// The arguments in the order the body's names take them.\n    \
                 #[allow(unused_mut)]\n    \
                 pub(in crate::redis) fn encode(self) -> Vec<Vec<u8>> {{\n        \
                 let mut out = vec![{}];{tail}\n        out\n    }}\n}}\n",
                encoded.join(", ")
            )
            .expect("writing to a string");
        }
    }
    let shared = lua_files(&dir.join("shared"));
    let mut parts = String::new();
    for path in &shared {
        let name = path
            .file_name()
            .and_then(|s| s.to_str())
            .expect("a UTF-8 file name");
        writeln!(
            parts,
            "    (\"{name}\", include_str!(concat!(env!(\"CARGO_MANIFEST_DIR\"), \"/src/redis/lua/shared/{name}\"))),"
        )
        .expect("writing to a string");
    }
    let out = Path::new(&std::env::var("OUT_DIR").expect("OUT_DIR is set")).join("functions.rs");
    std::fs::write(
        out,
        format!("functions! {{\n{rows}}}\n\n{types}\n/// The library's shared part, file by file in name order.\nconst SHARED: &[(&str, &str)] = &[\n{parts}];\n"),
    )
    .expect("OUT_DIR is writable");
}

/// How a reply value of each type is read (`src/redis/reply.rs`), and
/// its Rust type.
const REPLY_TYPES: [(&str, &str, &str); 6] = [
    ("uint", "uint", "u64"),
    ("int", "int", "i64"),
    ("text", "text", "std::sync::Arc<str>"),
    ("bytes", "bytes", "std::sync::Arc<[u8]>"),
    ("attrs", "attrs", "crate::base::attrs::Attrs"),
    ("millis", "millis", "std::time::Duration"),
];

/// `(name, reader, Rust type)` of each `name type` in `list`.
fn reply_fields<'a>(list: &'a str, path: &Path) -> Vec<(&'a str, &'static str, &'static str)> {
    list.split(", ")
        .filter(|f| !f.is_empty())
        .map(|field| {
            let (name, ty) = field.split_once(' ').unwrap_or_else(|| {
                panic!(
                    "{}: a reply value is `name type`: {field:?}",
                    path.display()
                )
            });
            let (_, read, rust) = REPLY_TYPES
                .iter()
                .find(|(t, ..)| *t == ty)
                .unwrap_or_else(|| panic!("{}: unknown reply type {ty:?}", path.display()));
            (name, *read, *rust)
        })
        .collect()
}

/// The `<Camel>Reply` type (and `<Camel>Row`) of a `-- reply:` line.
fn reply_type(types: &mut String, op: &str, camel: &str, line: &str, path: &Path) {
    let (head, each) = match (line.strip_prefix("each: "), line.split_once("; each: ")) {
        (Some(each), _) => ("", Some(each)),
        (None, Some((head, each))) => (head, Some(each)),
        (None, None) => (line, None),
    };
    let head = reply_fields(head, path);
    let each = each.map(|e| reply_fields(e, path));
    let decl = |fields: &[(&str, &str, &str)]| -> String {
        fields
            .iter()
            .map(|(n, _, t)| format!("    pub(in crate::redis) {n}: {t},\n"))
            .collect()
    };
    let reads = |fields: &[(&str, &str, &str)], indent: &str| -> String {
        fields
            .iter()
            .enumerate()
            .map(|(i, (n, read, _))| format!("{indent}{n}: reply.{read}(at + {i})?,\n"))
            .collect()
    };
    let mut fields = decl(&head);
    let mut rows = String::new();
    if let Some(each) = &each {
        fields.push_str(&format!(
            "    pub(in crate::redis) each: Vec<{camel}Row>,\n"
        ));
        writeln!(
            types,
            "/// One row of `{op}`'s reply.\n\
             pub(in crate::redis) struct {camel}Row {{\n{}}}\n",
            decl(each)
        )
        .expect("writing to a string");
        rows = format!(
            "        let mut each = Vec::new();\n        \
             while at < reply.len() {{\n            \
             each.push({camel}Row {{\n{}            }});\n            \
             at += {};\n        }}\n",
            reads(each, "                "),
            each.len()
        );
    }
    let head_reads: String = head
        .iter()
        .enumerate()
        .map(|(i, (n, read, _))| format!("        let {n} = reply.{read}(at + {i})?;\n"))
        .collect();
    let names: Vec<&str> = head
        .iter()
        .map(|(n, ..)| *n)
        .chain(each.as_ref().map(|_| "each"))
        .collect();
    writeln!(
        types,
        "/// The values of `{op}`'s `OK` reply (`lua/{op}.lua`), by the names its\n\
         /// header gives them.\n\
         pub(in crate::redis) struct {camel}Reply {{\n{fields}}}\n\n\
         impl {camel}Reply {{\n    \
         /// Reads an `OK` reply: exactly these values after its code.\n    \
         #[allow(unused_mut, clippy::identity_op)]\n    \
         pub(in crate::redis) fn decode(reply: &super::reply::Reply) -> crate::base::error::Result<Self> {{\n        \
         let mut at = 1;\n{head_reads}        \
         at += {n};\n{rows}        \
         super::reply::exactly(reply, at)?;\n        \
         Ok(Self {{ {names} }})\n    }}\n}}\n",
        n = head.len(),
        names = names.join(", "),
    )
    .expect("writing to a string");
}

/// The `.lua` files of `dir` (not of its subdirectories), in name order.
fn lua_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{} is not readable: {e}", dir.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "lua"))
        .collect();
    files.sort();
    files
}
