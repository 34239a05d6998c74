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
