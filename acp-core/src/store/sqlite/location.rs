//! Where [`SqliteStore::open_default`](super::SqliteStore::open_default) keeps an agent's
//! sessions: the data directory and the agent's directory name in it.

use std::ffi::OsString;
use std::path::PathBuf;

/// The data directory of the default stores: `env_value` (the value of `$ACP_DATA_DIR`) if set
/// and not empty, else `acp` in `platform` (the platform's user data directory: agents' names
/// must not collide with other applications' directories there).
pub(super) fn data_dir_from(
    env_value: Option<OsString>,
    platform: Option<PathBuf>,
) -> Option<PathBuf> {
    match env_value {
        Some(dir) if !dir.is_empty() => Some(PathBuf::from(dir)),
        _ => platform.map(|dir| dir.join("acp")),
    }
}

/// An agent's name as a directory name that is safe on every platform: ASCII letters, digits,
/// `-`, `_`, `.` (not leading or trailing), at most 64 bytes, not a reserved Windows device
/// name; a name that had to be changed gets 8 hex digits of a hash of the original.
pub(super) fn dir_name(agent_name: &str) -> String {
    let mut name: String = agent_name
        .chars()
        .map(|c| match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '-' | '_' | '.' => c,
            _ => '_',
        })
        .collect();
    name = name.trim_matches('.').to_owned();
    name.truncate(64);
    let stem = name
        .split('.')
        .next()
        .unwrap_or_default()
        .to_ascii_uppercase();
    let reserved = matches!(stem.as_str(), "CON" | "PRN" | "AUX" | "NUL")
        || (stem.len() == 4
            && (stem.starts_with("COM") || stem.starts_with("LPT"))
            && stem.as_bytes()[3].is_ascii_digit());
    if name.is_empty() {
        name = "agent".to_owned();
    } else if reserved {
        name.insert(0, '_');
    }
    if name != agent_name {
        // FNV-1a: stable across versions and platforms.
        let hash = agent_name.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
        name = format!("{name}-{:08x}", hash as u32);
    }
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_data_dir_is_the_variable_if_set_else_acp_in_the_platforms() {
        let platform = || Some(PathBuf::from("/home/me/.local/share"));
        assert_eq!(
            data_dir_from(Some("/data/acp".into()), platform()),
            Some(PathBuf::from("/data/acp"))
        );
        assert_eq!(
            data_dir_from(None, platform()),
            Some(PathBuf::from("/home/me/.local/share/acp"))
        );
        assert_eq!(
            data_dir_from(Some(OsString::new()), platform()),
            Some(PathBuf::from("/home/me/.local/share/acp")),
            "an empty variable is unset"
        );
        assert_eq!(
            data_dir_from(Some("/x".into()), None),
            Some(PathBuf::from("/x"))
        );
        assert_eq!(data_dir_from(None, None), None);
    }

    #[test]
    fn agent_names_become_safe_distinct_directory_names() {
        for plain in ["scribe", "my-agent_2", "v1.2"] {
            assert_eq!(dir_name(plain), plain);
        }
        let changed = [
            "../../etc",
            "a/b",
            "a\\b",
            "",
            "..",
            "My Agent",
            "My_Agent.",
            "con",
            "COM1.txt",
            "écrivain",
            "agent\0",
        ];
        let mut seen = std::collections::HashSet::new();
        for name in changed {
            let dir = dir_name(name);
            assert!(
                dir.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b)),
                "{name:?} → {dir}"
            );
            assert!(!dir.starts_with('.') && !dir.ends_with('.'), "{dir}");
            assert_ne!(dir, name);
            assert!(seen.insert(dir.clone()), "{name:?} collides: {dir}");
        }
        assert!(dir_name("con").starts_with("_con-"));
        assert!(dir_name(&"x".repeat(300)).len() <= 64 + 9);
        assert_ne!(dir_name("My Agent"), dir_name("My_Agent"));
    }
}
