//! What a store keeps of a session's events: [`Record`] (one event, as JSON that later
//! versions read back) and [`Batch`] (records already encoded, one line each, as the runtime
//! hands them to the store).

use serde_json::value::RawValue;

use crate::error::Result;
use crate::schema;

/// One recorded event of a session, in the order it happened.
///
/// Stored as JSON (`{"kind": "update", "update": {...}}`), so a later version of the crate
/// reads what an earlier one wrote.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Record {
    /// A `session/update` payload (a `schema::SessionUpdate` as JSON): the user's prompt as
    /// `user_message_chunk`s, agent chunks, tool calls, plans, mode/config/title changes.
    Update {
        /// The update, as the JSON text sent to the client (kept as text: recording an update
        /// costs no second serialization, and replaying it no parse). [`Record::to_update`]
        /// reads it back.
        update: Box<RawValue>,
    },
    /// A prompt turn ended with this stop reason (e.g. "end_turn", "cancelled").
    TurnEnded {
        /// The stop reason, as the protocol spells it.
        stop_reason: String,
    },
}

impl Record {
    /// The record of `update`.
    pub fn update(update: &schema::SessionUpdate) -> Result<Record> {
        Ok(Record::Update {
            update: serde_json::value::to_raw_value(update)?,
        })
    }

    /// The update this record holds, read back (`None` for other records).
    pub fn to_update(&self) -> Option<Result<schema::SessionUpdate>> {
        match self {
            Record::Update { update } => {
                Some(serde_json::from_str(update.get()).map_err(Into::into))
            }
            Record::TurnEnded { .. } => None,
        }
    }
}

/// Records are equal when they are the same event with the same JSON text.
impl PartialEq for Record {
    fn eq(&self, other: &Record) -> bool {
        match (self, other) {
            (Record::Update { update: a }, Record::Update { update: b }) => a.get() == b.get(),
            (Record::TurnEnded { stop_reason: a }, Record::TurnEnded { stop_reason: b }) => a == b,
            _ => false,
        }
    }
}

/// How a record is read: serde's internally tagged enums cannot hold a [`RawValue`], so the
/// tag and the fields are read as one struct and checked by hand.
#[derive(serde::Deserialize)]
struct StoredRecord {
    kind: String,
    update: Option<Box<RawValue>>,
    stop_reason: Option<String>,
}

impl<'de> serde::Deserialize<'de> for Record {
    fn deserialize<D: serde::Deserializer<'de>>(
        deserializer: D,
    ) -> std::result::Result<Record, D::Error> {
        use serde::de::Error as _;
        let stored = StoredRecord::deserialize(deserializer)?;
        match (stored.kind.as_str(), stored.update, stored.stop_reason) {
            ("update", Some(update), _) => Ok(Record::Update { update }),
            ("turn_ended", _, Some(stop_reason)) => Ok(Record::TurnEnded { stop_reason }),
            ("update", None, _) => Err(D::Error::missing_field("update")),
            ("turn_ended", _, None) => Err(D::Error::missing_field("stop_reason")),
            (kind, _, _) => Err(D::Error::unknown_variant(kind, &["update", "turn_ended"])),
        }
    }
}

/// Records already encoded the way stores keep them: one JSON line each, as [`Record`]
/// serializes. The runtime hands the store a batch at a time ([`SessionStore::append_batch`](super::SessionStore::append_batch)),
/// built straight from the frames it sends, so recording an update costs one copy of its text.
///
/// ```
/// use acp_core::store::{Batch, Record};
/// use acp_core::schema::{ContentChunk, SessionUpdate};
///
/// let mut batch = Batch::new();
/// batch.push(&Record::update(&SessionUpdate::AgentMessageChunk(ContentChunk::new("hi".into())))?)?;
/// assert_eq!(batch.len(), 1);
/// assert_eq!(batch.records()?.len(), 1);
/// # Ok::<(), acp_core::Error>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Batch {
    text: String,
    count: usize,
}

impl Batch {
    /// An empty batch.
    pub fn new() -> Self {
        Batch::default()
    }

    /// A batch of `records`, in order (what a store's [`append`](super::SessionStore::append)
    /// hands to its `append_batch`).
    pub fn of(records: &[Record]) -> Result<Self> {
        let mut batch = Batch::new();
        for record in records {
            batch.push(record)?;
        }
        Ok(batch)
    }

    /// Appends `record` as one more line.
    pub fn push(&mut self, record: &Record) -> Result<()> {
        let mut line = serde_json::to_string(record)?;
        if line.contains('\n') {
            // An update given as pretty-printed JSON text: compacted, to stay one line.
            line = serde_json::to_string(&serde_json::to_value(record)?)?;
        }
        self.start_line();
        self.text.push_str(&line);
        Ok(())
    }

    /// Appends the record of an update whose JSON text is `update`: compact JSON (no raw
    /// newline), as `serde_json` writes it.
    pub(crate) fn push_update_json(&mut self, update: &str) {
        self.start_line();
        self.text.push_str(r#"{"kind":"update","update":"#);
        self.text.push_str(update);
        self.text.push('}');
    }

    fn start_line(&mut self) {
        if self.count > 0 {
            self.text.push('\n');
        }
        self.count += 1;
    }

    /// How many records the batch holds.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether the batch holds no record.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The records, one JSON line each (no trailing newline).
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Appends the records of `other`, after this batch's.
    pub fn append(&mut self, other: &Batch) {
        if other.count == 0 {
            return;
        }
        self.start_line();
        self.text.push_str(&other.text);
        self.count += other.count - 1;
    }

    /// The records, read back.
    pub fn records(&self) -> Result<Vec<Record>> {
        if self.count == 0 {
            return Ok(Vec::new());
        }
        self.text
            .split('\n')
            .map(|line| serde_json::from_str(line).map_err(Into::into))
            .collect()
    }
}
