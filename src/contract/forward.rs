//! The one way an engine serves the contract: each listed operation is the
//! engine's inherent method of the same name, called with the same
//! arguments. An engine lists what it serves so (one line an operation,
//! its signature the trait's, which the compiler holds it to) and writes
//! out only what it serves otherwise.

/// Implements the listed contract methods by the engine's inherent methods
/// of the same names.
///
/// - `ready Engine: ...` for an engine whose inherent methods finish
///   before they return (the in-memory store): the result is handed back
///   as a future that is already complete, so dropping it can cancel
///   nothing.
/// - `async Engine: ...` for an engine whose inherent methods are async
///   (the Redis engine): the method's future is awaited.
macro_rules! forward {
    (ready $engine:ident: $($name:ident($($arg:ident: $ty:ty),*) -> $out:ty;)*) => {
        $(
            fn $name(&self, $($arg: $ty),*) -> impl ::std::future::Future<Output = $out> + Send {
                ::std::future::ready($engine::$name(self, $($arg),*))
            }
        )*
    };
    (async $engine:ident: $($name:ident($($arg:ident: $ty:ty),*) -> $out:ty;)*) => {
        $(
            async fn $name(&self, $($arg: $ty),*) -> $out {
                $engine::$name(self, $($arg),*).await
            }
        )*
    };
}

pub(crate) use forward;
