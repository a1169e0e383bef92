//! The one macro every settings struct of the contract is written with.

/// Defines a settings struct and, for each of its fields, a setter of the
/// same name that takes the field's value and returns the settings, so a
/// configuration reads as a chain from its defaults:
/// `StoreConfig::default().leases_max(50_000).ttl_max(Duration::from_secs(3600))`.
/// The fields stay public for reading; outside the crate the structs
/// (`#[non_exhaustive]`) are built only through the setters, written once,
/// here.
///
/// Written with a default after each field (`pub leases_max: u64 =
/// 1_000_000,`), it also makes the struct's `Default` from them, and each
/// field's documentation ends with its default, so the rustdoc and the
/// value are one text.
macro_rules! settings {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $($(#[$field_meta:meta])* pub $field:ident: $ty:ty = $default:expr,)*
        }
    ) => {
        $crate::contract::settings::settings! {
            $(#[$meta])*
            pub struct $name {
                $(
                    $(#[$field_meta])*
                    #[doc = ""]
                    #[doc = concat!("Default: `", stringify!($default), "`.")]
                    pub $field: $ty,
                )*
            }
        }

        impl Default for $name {
            fn default() -> Self {
                $name {
                    $($field: $default,)*
                }
            }
        }
    };
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $($(#[$field_meta:meta])* pub $field:ident: $ty:ty,)*
        }
    ) => {
        $(#[$meta])*
        pub struct $name {
            $($(#[$field_meta])* pub $field: $ty,)*
        }

        impl $name {
            $(
                #[doc = concat!("Sets [`", stringify!($field), "`](Self::", stringify!($field), ").")]
                #[must_use]
                pub fn $field(mut self, value: $ty) -> Self {
                    self.$field = value;
                    self
                }
            )*
        }
    };
}
pub(crate) use settings;
