//! (being written)
use crate::registry::MethodInfo;
pub(crate) fn info() -> MethodInfo {
    MethodInfo { name: "lle", summary: "", reference: "", params: vec![], build: |_| Ok(Box::new(crate::identity::Identity)) }
}
