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
