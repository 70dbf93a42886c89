//! The identity map as one JSON file beside the user profiles, in the form Ethos keeps it, written
//! like a document: under a lock file, by atomic rename.
//!
//! Ethos (`IdentityMap` in its `packages/wiring/src/identity-map.ts`) keeps
//! `users/identity-map.json` as a JSON array of `{platform, platformUserId, userId, displayLabel,
//! firstSeenAt}` entries: it answers with the first entry whose `platform` and `platformUserId`
//! are the ones asked, appends the entries it mints, and writes the whole array back as
//! `JSON.stringify(entries, null, 2)` (two-space indent, no newline at the end). A missing or empty
//! file is the empty map to it. Both programs share one root, so this module reads and writes that
//! form, keeps what it does not use (other fields, entries it cannot read) as it found them, and
//! still reads the object this provider wrote before (`{"<platform>": {"<platform user id>":
//! "<user id>"}}`), which it turns into the array on its next write.
//!
//! The middle layer: the map's file, and Ethos's lock on it (`ethos_lock`, a part of this
//! module), built on `files` alone.

use std::collections::BTreeMap;
use std::fmt;
use std::fs;
use std::io::ErrorKind;
use std::path::Path;
use std::time::{Duration, SystemTime};

use memory_core::{Identity, MemoryError, UserId};
use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::{RawValue, to_raw_value};

use crate::files;

mod ethos_lock;

/// Every link, in the order [`memory_core::IdentityMap::identities`] returns them.
pub(crate) type Links = BTreeMap<Identity, UserId>;

/// The map as stored now; a missing or empty file is the empty map. Needs no lock: the file is
/// only ever replaced whole, by rename.
pub(crate) fn read(path: &Path) -> Result<StoredMap, MemoryError> {
    let bytes = match fs::read(path) {
        Ok(bytes) => bytes,
        Err(err) if err.kind() == ErrorKind::NotFound => return Ok(StoredMap::default()),
        Err(err) => return Err(files::read_error(path, err)),
    };
    StoredMap::parse(&bytes).map_err(|reason| MemoryError::Corrupt {
        location: path.display().to_string(),
        reason,
    })
}

/// Links `identity` to `user` under the map's locks, re-reading the map under them, and returns
/// the user it was linked to before. A corrupt map is reported and left as it is.
pub(crate) fn link(
    path: &Path,
    identity: &Identity,
    user: &UserId,
    relink: bool,
    lock_timeout: Duration,
) -> Result<Option<UserId>, MemoryError> {
    let _locks = lock(path, lock_timeout)?;
    let mut map = read(path)?;
    let previous = map.user(identity);
    if identity.check_link(previous.as_ref(), user, relink)? {
        map.link(identity, user);
        files::replace(path, &map.render())?;
    }
    Ok(previous)
}

/// Removes the link of `identity` under the map's locks, re-reading the map under them, and
/// returns the user it was linked to. A corrupt map is reported and left as it is.
///
/// Not linked: nothing is written, not even the lock files or the `users` directory, since an
/// identity absent from the map as read now (it is only ever replaced whole) is absent at that
/// moment, which is all the answer `None` says. Of concurrent unlinks of one identity, exactly
/// one finds it under the lock.
pub(crate) fn unlink(
    path: &Path,
    identity: &Identity,
    lock_timeout: Duration,
) -> Result<Option<UserId>, MemoryError> {
    if read(path)?.user(identity).is_none() {
        return Ok(None);
    }
    let _locks = lock(path, lock_timeout)?;
    let mut map = read(path)?;
    let previous = map.unlink(identity);
    if previous.is_some() {
        files::replace(path, &map.render())?;
    }
    Ok(previous)
}

/// Our own lock (`.identity-map.json.lock`, which every provider on the root takes), then the one
/// Ethos takes before it mints (`identity-map.json.lock`), so that neither program writes the map
/// between the other's re-read and its rename. Ethos never waits on ours, so the order cannot
/// deadlock.
fn lock(path: &Path, lock_timeout: Duration) -> Result<(fs::File, ethos_lock::Held), MemoryError> {
    let ours = files::lock(path, lock_timeout, |attempts| MemoryError::Unavailable {
        what: path.display().to_string(),
        message: format!(
            "other writers held its lock for longer than {lock_timeout:?} ({attempts} attempts); nothing was written"
        ),
        source: None,
    })?;
    let ethos = ethos_lock::acquire(path, lock_timeout)?;
    Ok((ours, ethos))
}

/// The map as stored: every entry of the array in its order, each kept as it was read until it
/// changes.
#[derive(Debug, Default)]
pub(crate) struct StoredMap {
    entries: Vec<Entry>,
}

/// One element of the array.
#[derive(Debug)]
struct Entry {
    /// The link it holds, when it names an identity and a user this provider can represent;
    /// `None` for anything else (not an object, no string `platform` or `platformUserId`, or one
    /// that is not a valid identity), which no lookup of ours can ever match, as none of
    /// Ethos's can match a string we could be asked for.
    link: Option<(Identity, UserId)>,
    text: EntryText,
}

/// An object's fields in order, each value as its JSON text.
type Fields = Vec<(String, Box<RawValue>)>;

#[derive(Debug)]
enum EntryText {
    /// As read: written back byte for byte, whatever fields and spacing it has; with its fields
    /// when it is a link, for a relink to change.
    Stored(Box<RawValue>, Option<Fields>),
    /// Made or changed here: its fields in order, their values as read where they were read.
    Fields(Fields),
}

impl StoredMap {
    /// Reads either form; the reason when the bytes are neither.
    fn parse(bytes: &[u8]) -> Result<StoredMap, String> {
        // Ethos reads an empty file as the empty map (`raw ? JSON.parse(raw) : []`).
        if bytes.is_empty() {
            return Ok(StoredMap::default());
        }
        match bytes.iter().find(|byte| !byte.is_ascii_whitespace()) {
            Some(b'[') => StoredMap::parse_array(bytes),
            Some(b'{') => StoredMap::parse_object(bytes),
            _ => Err(format!(
                "not an identity map: it holds neither {ARRAY_FORM} nor {OBJECT_FORM}"
            )),
        }
    }

    fn parse_array(bytes: &[u8]) -> Result<StoredMap, String> {
        let elements: Vec<Box<RawValue>> = serde_json::from_slice(bytes)
            .map_err(|err| format!("not an identity map of the form {ARRAY_FORM}: {err}"))?;
        let entries = elements
            .into_iter()
            .enumerate()
            .map(|(index, raw)| {
                let link = read_link(&raw)
                    .map_err(|reason| format!("entry {} of the array: {reason}", index + 1))?;
                Ok(match link {
                    Some((identity, user, fields)) => Entry {
                        link: Some((identity, user)),
                        text: EntryText::Stored(raw, Some(fields)),
                    },
                    None => Entry {
                        link: None,
                        text: EntryText::Stored(raw, None),
                    },
                })
            })
            .collect::<Result<_, String>>()?;
        Ok(StoredMap { entries })
    }

    /// The form this provider wrote before it wrote Ethos's, read as strictly as it was then:
    /// every key and value must be a valid id. Its links become entries as a link made now
    /// would, written out only by the next write that changes the map.
    fn parse_object(bytes: &[u8]) -> Result<StoredMap, String> {
        let platforms: BTreeMap<String, BTreeMap<String, UserId>> =
            serde_json::from_slice(bytes)
                .map_err(|err| format!("not an identity map of the form {OBJECT_FORM}: {err}"))?;
        let first_seen = now();
        let mut entries = Vec::new();
        for (platform, users) in platforms {
            for (platform_user, user) in users {
                let identity = Identity::new(platform.clone(), platform_user)
                    .map_err(|err| err.to_string())?;
                entries.push(Entry::new(identity, user, &first_seen));
            }
        }
        Ok(StoredMap { entries })
    }

    /// Every link; of several entries for one identity the first counts, as in Ethos.
    pub(crate) fn links(&self) -> Links {
        let mut links = Links::new();
        for (identity, user) in self.entries.iter().filter_map(|entry| entry.link.as_ref()) {
            links
                .entry(identity.clone())
                .or_insert_with(|| user.clone());
        }
        links
    }

    /// The user `identity` is linked to: its first entry's, as in Ethos.
    pub(crate) fn user(&self, identity: &Identity) -> Option<UserId> {
        self.entries.iter().find_map(|entry| match &entry.link {
            Some((linked, user)) if linked == identity => Some(user.clone()),
            _ => None,
        })
    }

    /// Points every entry of `identity` at `user`, keeping their other fields, or appends an
    /// entry for it as Ethos would mint one.
    fn link(&mut self, identity: &Identity, user: &UserId) {
        let mut found = false;
        for entry in &mut self.entries {
            if entry
                .link
                .as_ref()
                .is_some_and(|(linked, _)| linked == identity)
            {
                entry.set_user(user);
                found = true;
            }
        }
        if !found {
            self.entries
                .push(Entry::new(identity.clone(), user.clone(), &now()));
        }
    }

    /// Removes every entry of `identity`, so neither program finds it any more, and returns the
    /// user it was linked to.
    fn unlink(&mut self, identity: &Identity) -> Option<UserId> {
        let previous = self.user(identity);
        self.entries.retain(|entry| {
            entry
                .link
                .as_ref()
                .is_none_or(|(linked, _)| linked != identity)
        });
        previous
    }

    /// The array as Ethos writes it: `JSON.stringify(entries, null, 2)`, no newline at the end.
    /// Entries read and not changed come out as they went in.
    fn render(&self) -> String {
        serde_json::to_string_pretty(&self.entries)
            .expect("strings and JSON read from text always serialize")
    }
}

impl Entry {
    /// A new entry with the fields, in the order, Ethos gives one it mints; its display label is
    /// the one Ethos gives when the platform tells it none (`platform:platformUserId`).
    fn new(identity: Identity, user: UserId, first_seen: &str) -> Entry {
        let fields = [
            ("platform", identity.platform()),
            ("platformUserId", identity.platform_user()),
            ("userId", user.as_str()),
            ("displayLabel", &identity.to_string()),
            ("firstSeenAt", first_seen),
        ]
        .into_iter()
        .map(|(name, value)| (name.to_owned(), raw_string(value)))
        .collect();
        Entry {
            link: Some((identity, user)),
            text: EntryText::Fields(fields),
        }
    }

    /// Sets `userId`, keeping every other field as it is.
    fn set_user(&mut self, user: &UserId) {
        let mut fields = match std::mem::replace(&mut self.text, EntryText::Fields(Vec::new())) {
            EntryText::Fields(fields) | EntryText::Stored(_, Some(fields)) => fields,
            // Only links are relinked, and every link is read with its fields.
            EntryText::Stored(raw, None) => object_fields(&raw).unwrap_or_default(),
        };
        set_field(&mut fields, "userId", raw_string(user.as_str()));
        if let Some((_, linked)) = &mut self.link {
            *linked = user.clone();
        }
        self.text = EntryText::Fields(fields);
    }
}

impl Serialize for Entry {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match &self.text {
            EntryText::Stored(raw, _) => raw.serialize(serializer),
            EntryText::Fields(fields) => {
                let mut map = serializer.serialize_map(Some(fields.len()))?;
                for (name, value) in fields {
                    map.serialize_entry(name, value)?;
                }
                map.end()
            }
        }
    }
}

const ARRAY_FORM: &str =
    r#"[{"platform": "…", "platformUserId": "…", "userId": "…", …}] (as Ethos writes it)"#;
const OBJECT_FORM: &str = r#"{"<platform>": {"<platform user id>": "<user id>"}}"#;

/// The link an element of the array holds, with its fields: `None` when it names no identity
/// this provider can represent, the reason when it names one but links it to something that is
/// not a user id (answering for it would part ways with Ethos, which would answer with that
/// value).
fn read_link(raw: &RawValue) -> Result<Option<(Identity, UserId, Fields)>, String> {
    let Some(fields) = object_fields(raw) else {
        return Ok(None);
    };
    let (Some(platform), Some(platform_user)) = (
        string_field(&fields, "platform"),
        string_field(&fields, "platformUserId"),
    ) else {
        return Ok(None);
    };
    let Ok(identity) = Identity::new(platform, platform_user) else {
        return Ok(None);
    };
    let user = field(&fields, "userId").ok_or_else(|| format!("{identity} has no userId"))?;
    let text: String = serde_json::from_str(user.get())
        .map_err(|_| format!("the userId of {identity} is {}, not a string", user.get()))?;
    let user = UserId::new(text).map_err(|err| format!("the userId of {identity}: {err}"))?;
    Ok(Some((identity, user, fields)))
}

/// An object's fields in stored order, duplicates included; `None` when it is not an object.
fn object_fields(raw: &RawValue) -> Option<Fields> {
    serde_json::from_str::<ObjectFields>(raw.get())
        .ok()
        .map(|object| object.0)
}

/// A field's value; of a name given twice the last, as `JSON.parse` keeps it.
fn field<'a>(fields: &'a [(String, Box<RawValue>)], name: &str) -> Option<&'a RawValue> {
    fields
        .iter()
        .rev()
        .find(|(field, _)| field == name)
        .map(|(_, value)| &**value)
}

fn string_field(fields: &[(String, Box<RawValue>)], name: &str) -> Option<String> {
    serde_json::from_str(field(fields, name)?.get()).ok()
}

/// Sets a field where `JSON.parse` would (at its first place), dropping any later copies of its
/// name, or appends it.
fn set_field(fields: &mut Fields, name: &str, value: Box<RawValue>) {
    match fields.iter().position(|(field, _)| field == name) {
        Some(first) => {
            fields[first].1 = value;
            let mut index = 0;
            fields.retain(|(field, _)| {
                index += 1;
                index - 1 == first || field != name
            });
        }
        None => fields.push((name.to_owned(), value)),
    }
}

fn raw_string(text: &str) -> Box<RawValue> {
    to_raw_value(text).expect("a string always serializes")
}

/// Now as `Date.prototype.toISOString` writes it, which is what Ethos stores in `firstSeenAt`:
/// `2026-09-01T10:00:00.000Z`.
fn now() -> String {
    memory_core::raw::format_utc_millis(SystemTime::now())
}

/// A JSON object read as its fields in order, each value kept as its text.
struct ObjectFields(Fields);

impl<'de> Deserialize<'de> for ObjectFields {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct FieldsVisitor;
        impl<'de> Visitor<'de> for FieldsVisitor {
            type Value = ObjectFields;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ObjectFields, A::Error> {
                let mut fields = Vec::new();
                while let Some(entry) = map.next_entry::<String, Box<RawValue>>()? {
                    fields.push(entry);
                }
                Ok(ObjectFields(fields))
            }
        }
        deserializer.deserialize_map(FieldsVisitor)
    }
}
