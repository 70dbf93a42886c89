//! The data: LoCoMo's JSON Lines (`turns.jsonl`, `observations.jsonl`, `queries.jsonl`) parsed,
//! each turn or observation made the one-line entry MEMORY.md holds, and the map back from an
//! entry's text to the dialog ids it stands for.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use serde::Deserialize;
use serde::de::DeserializeOwned;

use crate::backends::BoxError;

/// A line of turns.jsonl (only the fields used; others are ignored).
#[derive(Debug, Deserialize)]
pub struct TurnLine {
    conv_id: String,
    dia_id: String,
    speaker: String,
    text: String,
    #[serde(default)]
    blip_caption: Option<String>,
}

/// A line of observations.jsonl.
#[derive(Debug, Deserialize)]
pub struct ObservationLine {
    conv_id: String,
    text: String,
    dia_ids: Vec<String>,
}

/// A line of queries.jsonl.
#[derive(Debug, Deserialize)]
pub struct QueryLine {
    pub conv_id: String,
    pub qid: String,
    pub question: String,
    pub category: u8,
    pub category_name: String,
    pub evidence: Vec<String>,
}

/// One entry of a conversation's MEMORY.md, and the dialog ids it stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub conv_id: String,
    /// One line, trimmed: exactly the text the index will return for it.
    pub text: String,
    ids: Vec<String>,
}

/// Makes `text` one line, trimmed. An entry is a paragraph of MEMORY.md, so a line break inside
/// it would be kept in the returned text (and a blank line would split it into two entries);
/// the index also trims paragraphs, so the map from returned texts must use trimmed texts.
fn one_line(text: &str) -> String {
    text.replace(['\r', '\n'], " ").trim().to_owned()
}

/// The entry text of a turn, as the data README words it: `<speaker> said, "<text>"`, followed
/// by ` and shared <caption>` when the turn shared an image (a blank caption counts as none).
fn turn_text(speaker: &str, text: &str, caption: Option<&str>) -> String {
    let mut entry = format!("{speaker} said, \"{text}\"");
    if let Some(caption) = caption.filter(|c| !c.trim().is_empty()) {
        entry.push_str(" and shared ");
        entry.push_str(caption);
    }
    one_line(&entry)
}

impl From<TurnLine> for Entry {
    fn from(turn: TurnLine) -> Self {
        Entry {
            text: turn_text(&turn.speaker, &turn.text, turn.blip_caption.as_deref()),
            conv_id: turn.conv_id,
            ids: vec![turn.dia_id],
        }
    }
}

impl From<ObservationLine> for Entry {
    fn from(observation: ObservationLine) -> Self {
        Entry {
            text: one_line(&observation.text),
            conv_id: observation.conv_id,
            ids: observation.dia_ids,
        }
    }
}

/// Parses JSON Lines (blank lines skipped). An error names `name` and the 1-based line, so a
/// bad line in a file of thousands can be found.
fn parse_jsonl<T: DeserializeOwned>(name: &str, bytes: &[u8]) -> Result<Vec<T>, String> {
    let mut parsed = Vec::new();
    for (index, line) in bytes.split(|&b| b == b'\n').enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let value =
            serde_json::from_slice(line).map_err(|err| format!("{name}:{}: {err}", index + 1))?;
        parsed.push(value);
    }
    Ok(parsed)
}

/// Reads and parses one JSON Lines file; errors name the file (and the line).
pub fn read_jsonl<T: DeserializeOwned>(path: &Path) -> Result<Vec<T>, BoxError> {
    let bytes = std::fs::read(path).map_err(|err| format!("{}: {err}", path.display()))?;
    Ok(parse_jsonl(&path.display().to_string(), &bytes)?)
}

/// Every dialog id each entry text stands for. The index keeps one row per distinct text, so
/// identical texts come back as one result: it counts for the ids of all of them.
pub fn ids_by_text<'a>(
    entries: impl IntoIterator<Item = &'a Entry>,
) -> HashMap<String, BTreeSet<String>> {
    let mut map: HashMap<String, BTreeSet<String>> = HashMap::new();
    for entry in entries {
        map.entry(entry.text.clone())
            .or_default()
            .extend(entry.ids.iter().cloned());
    }
    map
}

/// The conversations to evaluate: those asked for (each must have entries), else every one
/// with entries, in the order they first appear.
pub fn select_conversations(entries: &[Entry], asked: &[String]) -> Result<Vec<String>, String> {
    let mut present: Vec<&str> = Vec::new();
    for entry in entries {
        if !present.contains(&entry.conv_id.as_str()) {
            present.push(&entry.conv_id);
        }
    }
    if asked.is_empty() {
        return Ok(present.into_iter().map(str::to_owned).collect());
    }
    let mut selected: Vec<String> = Vec::new();
    for conv in asked.iter().map(|c| c.trim()) {
        if !present.contains(&conv) {
            return Err(format!(
                "no entries for conversation {conv:?}; the data has {}",
                present.join(", ")
            ));
        }
        if !selected.iter().any(|s| s == conv) {
            selected.push(conv.to_owned());
        }
    }
    Ok(selected)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_turn_reads_as_said_with_its_caption_on_one_line() {
        let turns: Vec<TurnLine> = parse_jsonl(
            "turns.jsonl",
            br#"{"conv_id": "c", "dia_id": "D1:1", "session": 1, "speaker": "Ann", "text": "Look!\nMy dog.", "blip_caption": "a photo of a dog"}
{"conv_id": "c", "dia_id": "D1:2", "speaker": "Bo", "text": " Nice ", "blip_caption": null}
{"conv_id": "c", "dia_id": "D1:3", "speaker": "Bo", "text": "Hi"}"#,
        )
        .unwrap();
        let entries: Vec<Entry> = turns.into_iter().map(Entry::from).collect();
        assert_eq!(
            entries[0].text,
            "Ann said, \"Look! My dog.\" and shared a photo of a dog"
        );
        assert_eq!(entries[0].ids, ["D1:1"]);
        assert_eq!(entries[1].text, "Bo said, \" Nice \"");
        assert_eq!(entries[2].text, "Bo said, \"Hi\"");
        assert_eq!(turn_text("Bo", "Hi", Some(" ")), "Bo said, \"Hi\"");
    }

    #[test]
    fn an_observation_counts_for_its_turns() {
        let observations: Vec<ObservationLine> = parse_jsonl(
            "observations.jsonl",
            br#"{"conv_id": "c", "position": 0, "text": "Ann has a dog.\r\n", "dia_ids": ["D1:1", "D1:2"]}"#,
        )
        .unwrap();
        let entry = Entry::from(observations.into_iter().next().unwrap());
        assert_eq!(entry.text, "Ann has a dog.");
        assert_eq!(entry.ids, ["D1:1", "D1:2"]);
    }

    #[test]
    fn identical_texts_map_to_the_union_of_their_ids() {
        let entry = |text: &str, ids: &[&str]| Entry {
            conv_id: "c".into(),
            text: text.into(),
            ids: ids.iter().map(|s| (*s).to_owned()).collect(),
        };
        let entries = [
            entry("Bo said, \"Hi\"", &["D1:1"]),
            entry("Ann said, \"Hey\"", &["D1:2"]),
            entry("Bo said, \"Hi\"", &["D3:4"]),
        ];
        let map = ids_by_text(&entries);
        assert_eq!(map.len(), 2);
        assert_eq!(
            map["Bo said, \"Hi\""],
            BTreeSet::from(["D1:1".to_owned(), "D3:4".to_owned()])
        );
        assert_eq!(
            map["Ann said, \"Hey\""],
            BTreeSet::from(["D1:2".to_owned()])
        );
    }

    #[test]
    fn a_bad_line_is_named_by_file_and_line() {
        let err = parse_jsonl::<QueryLine>(
            "data/queries.jsonl",
            b"{\"conv_id\": \"c\", \"qid\": \"c/q0\", \"question\": \"Why?\", \"category\": 1, \
              \"category_name\": \"multi-hop\", \"evidence\": [], \"answer\": \"x\"}\n\n\
              {\"conv_id\": \"c\", \"qid\": \"c/q1\"\n",
        )
        .unwrap_err();
        assert!(err.starts_with("data/queries.jsonl:3: "), "{err}");
        let err = parse_jsonl::<QueryLine>("q.jsonl", b"{\"conv_id\": 5}").unwrap_err();
        assert!(err.starts_with("q.jsonl:1: invalid type"), "{err}");
        let err = parse_jsonl::<QueryLine>("q.jsonl", b"\n\xff\xfe\n").unwrap_err();
        assert!(err.starts_with("q.jsonl:2: "), "{err}");
    }

    #[test]
    fn conversations_are_checked_and_kept_in_order() {
        let entry = |conv: &str| Entry {
            conv_id: conv.into(),
            text: "x".into(),
            ids: Vec::new(),
        };
        let entries = [entry("b"), entry("a"), entry("b")];
        assert_eq!(select_conversations(&entries, &[]).unwrap(), ["b", "a"]);
        let asked = ["a".to_owned(), " b".to_owned(), "a".to_owned()];
        assert_eq!(select_conversations(&entries, &asked).unwrap(), ["a", "b"]);
        let err = select_conversations(&entries, &["z".to_owned()]).unwrap_err();
        assert!(err.contains("\"z\"") && err.contains("b, a"), "{err}");
    }
}
