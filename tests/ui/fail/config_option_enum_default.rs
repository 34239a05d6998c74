// `default = …` is for switches; a choice starts at its `#[default]` variant.
#[derive(acp::ConfigOption, Clone, Copy, Default)]
#[config(default = true)]
enum Tone {
    #[default]
    Plain,
    Loud,
}

fn main() {}
