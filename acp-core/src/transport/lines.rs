//! Newline-delimited framing of the input: one message per line, lines over a limit skipped
//! (and reported) without buffering them, blank lines ignored.

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, BufReader};

/// Longest accepted input line by default; a longer one is reported and skipped.
pub(crate) const DEFAULT_MAX_LINE: usize = 64 * 1024 * 1024;

/// One line of input.
#[derive(Debug)]
pub(crate) enum Line<'a> {
    /// A line's bytes, without the newline and surrounding whitespace; never empty.
    Message(&'a [u8]),
    /// A line longer than the limit, already skipped.
    TooLong,
}

/// Reads the input line by line.
#[derive(Debug)]
pub(crate) struct LineReader<R> {
    reader: BufReader<R>,
    line: Vec<u8>,
    max: usize,
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    /// Reads `reader`, accepting lines of at most `max` bytes.
    pub fn new(reader: R, max: usize) -> Self {
        LineReader {
            reader: BufReader::with_capacity(64 * 1024, reader),
            line: Vec::with_capacity(4096),
            max,
        }
    }

    /// The longest line accepted.
    pub fn max(&self) -> usize {
        self.max
    }

    /// The next non-blank line; `None` at end of input.
    pub async fn next(&mut self) -> std::io::Result<Option<Line<'_>>> {
        loop {
            self.line.clear();
            let n = (&mut self.reader)
                .take(self.max as u64 + 1)
                .read_until(b'\n', &mut self.line)
                .await?;
            if n == 0 {
                return Ok(None);
            }
            if self.line.len() > self.max && !self.line.ends_with(b"\n") {
                self.skip_rest().await?;
                return Ok(Some(Line::TooLong));
            }
            if !self.line.trim_ascii().is_empty() {
                return Ok(Some(Line::Message(self.line.trim_ascii())));
            }
        }
    }

    /// Skips the rest of an oversized line, a megabyte at a time.
    async fn skip_rest(&mut self) -> std::io::Result<()> {
        while !self.line.ends_with(b"\n") {
            self.line.clear();
            let n = (&mut self.reader)
                .take(1 << 20)
                .read_until(b'\n', &mut self.line)
                .await?;
            if n == 0 {
                break;
            }
        }
        Ok(())
    }
}
