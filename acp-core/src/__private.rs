//! The whole ABI the expansion of `#[acp::agent]` relies on, in one place. Not a stable API:
//! use the macros. The `acp` facade re-exports it as `acp::__private`.

pub use crate::tools::by_name::{Args, by_name, into_error, unknown_tool};
pub use crate::tools::checks::{
    ArgDeserialize, ArgSchema, ArgSerialize, AsyncCheck, AsyncCheckFn, CheckFuture, Ret, SyncCheck,
    ToolCheck, ToolError, ToolReturn, box_send, no_check, ret, run_check, send,
};
pub use crate::tools::lifecycle::run_tool;
pub use crate::tools::schema::{Def, def};
pub use crate::tools::spec::{
    ALLOW_ALWAYS, ALLOW_ONCE, Param, REJECT_ALWAYS, REJECT_ONCE, ToolInput, ToolSpec,
};
pub use crate::tools::title::render_title;

/// Every method name the runtime's method table answers, in any protocol version this build
/// speaks (with the features it was built with): what the macros' table of recognised methods
/// is checked against.
pub fn answered_methods() -> Vec<&'static str> {
    crate::router::method_names()
}
