// A switch is a `struct Name(bool)`: a struct holding anything else is one error.
#[derive(acp::ConfigOption, Default)]
struct Temperature(f32);

fn main() {}
