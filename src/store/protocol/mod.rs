//! The protocol every record kind follows, knowing no kind: how a record
//! comes into the store (`attach`), how it leaves (`retire`), when it is
//! visible (`visible`), the transitions' decisions as pure functions
//! (`decide`), a named record's key (`name_key`) and the parts a kind's
//! words beside its slot are built of (`slot_parts`). No file here
//! imports a file of `kinds/` or `mechanisms/`.

pub(in crate::store) mod attach;
pub(in crate::store) mod decide;
pub(in crate::store) mod name_key;
pub(in crate::store) mod retire;
pub(in crate::store) mod slot_parts;
pub(in crate::store) mod visible;
