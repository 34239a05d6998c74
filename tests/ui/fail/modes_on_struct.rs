// Modes are an enum of unit variants: #[derive(acp::Modes)] on a struct is one error.
#[derive(acp::Modes, Default)]
struct Mode(bool);

fn main() {}
