//! Unit tests of the local backend's pieces: the output buffer and the display of a command.

use super::terminal::OutputBuffer;

fn pushed(limit: usize, chunks: &[&str]) -> (String, bool) {
    let mut buffer = OutputBuffer::new(limit);
    for chunk in chunks {
        buffer.push(chunk.as_bytes());
    }
    (buffer.text(), buffer.truncated)
}

#[test]
fn the_output_keeps_its_tail_within_the_limit_cut_at_a_character_boundary() {
    assert_eq!(pushed(10, &["abc", "def"]), ("abcdef".into(), false));
    assert_eq!(pushed(6, &["abc", "def"]), ("abcdef".into(), false));
    assert_eq!(pushed(4, &["abc", "def"]), ("cdef".into(), true));
    // One chunk longer than the limit: its own tail.
    assert_eq!(pushed(3, &["abcdefgh"]), ("fgh".into(), true));
    // "é" is 2 bytes, "€" 3: a cut inside one drops the rest of it (the kept output may be
    // shorter than the limit, never longer, never invalid).
    assert_eq!(pushed(4, &["xé€"]), ("€".into(), true));
    assert_eq!(pushed(5, &["xé€"]), ("é€".into(), true));
    assert_eq!(pushed(2, &["€"]), ("".into(), true));
    assert_eq!(pushed(0, &["a"]), ("".into(), true));
    assert_eq!(pushed(0, &[]), ("".into(), false));
    // Once truncated, always truncated.
    assert_eq!(pushed(2, &["abc", ""]), ("bc".into(), true));
}

#[test]
fn a_character_split_between_chunks_is_whole_once_both_arrive() {
    let euro = "€".as_bytes();
    let mut buffer = OutputBuffer::new(16);
    buffer.push(&euro[..1]);
    buffer.push(&euro[1..]);
    assert_eq!(buffer.text(), "€");
}

#[cfg(unix)]
#[tokio::test]
async fn the_observer_sees_a_terminal_start_write_exit_and_be_released_in_order() {
    use std::sync::{Arc, Mutex};

    use tokio_util::sync::CancellationToken;

    use super::{LocalTerminal, TerminalEvent, TerminalObserver};
    use crate::schema::CreateTerminalRequest;

    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let log = seen.clone();
    let observer: TerminalObserver = Arc::new(move |terminal: &LocalTerminal, event| {
        let entry = match event {
            TerminalEvent::Started => format!("started {}", terminal.command_line()),
            TerminalEvent::Output(bytes) => format!("output {}", String::from_utf8_lossy(bytes)),
            TerminalEvent::Exited(status) => format!("exited {:?}", status.exit_code),
            TerminalEvent::Released => "released".to_owned(),
        };
        log.lock().unwrap().push(entry);
    });
    let req = CreateTerminalRequest::new("s1", "printf").args(vec!["a b".into()]);
    let cwd = std::env::temp_dir();
    let terminal = LocalTerminal::spawn(
        &req,
        cwd,
        &crate::session::grant::Grant::host(),
        CancellationToken::new(),
        Some(observer),
    );
    let terminal = terminal.unwrap();
    assert_eq!(terminal.wait().await.exit_code, Some(0));
    terminal.release();
    terminal.release();
    assert_eq!(
        *seen.lock().unwrap(),
        [
            "started printf 'a b'",
            "output a b",
            "exited Some(0)",
            "released"
        ]
    );
}
