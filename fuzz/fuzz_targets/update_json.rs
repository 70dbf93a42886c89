//! The update JSON, as `memory sync` reads it (a JSON array of updates) and as `POST /v1/sync`
//! reads it (an object with `personality`, `user`, `updates` and `if_match`): whatever an agent
//! or a client sends.
//!
//! Beyond not panicking:
//! - what parses serializes back to the same updates (parse, render, parse round-trips, and the
//!   rendering is stable);
//! - what does not parse is an error that says where (the line and column `memory sync` shows);
//! - what parses is planned and applied to two documents, with and without caps, and every
//!   outcome is the one the update table of CONTRACT.md gives (a model written from that table,
//!   as memory-core's no_panic_on_update_json test has it), every refusal naming the document
//!   and the update's position;
//! - ids in a sync body are accepted exactly as given, or refused naming what was wrong.

#![no_main]

use libfuzzer_sys::fuzz_target;
use memory_core::raw::{plan_sync, sha256_hex};
use memory_core::{
    Budgets, Caps, Document, IfMatch, MemoryContext, MemoryError, MemoryUpdate, PersonalityId,
    Store, UserId, Version,
};
use serde::Deserialize;

/// The documents the updates apply to: words the seeds edit and remove, a list, a repeat.
const MEMORY: &str = "Prefers metric units.\n\n- likes tea\n- obsolete note\n- likes tea too\n";
const USER: &str = "Name: Ada\n";

/// The body of `POST /v1/sync` (memory-web's `SyncRequest`, which is private to it): the same
/// fields, the same refusal of unknown ones.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct SyncBody {
    personality: String,
    user: String,
    updates: Vec<MemoryUpdate>,
    #[serde(default)]
    if_match: Option<IfMatch>,
    #[serde(default)]
    surface: Option<serde_json::Value>,
    #[serde(default)]
    session: Option<serde_json::Value>,
}

fuzz_target!(|data: &[u8]| {
    let updates = match serde_json::from_slice::<Vec<MemoryUpdate>>(data) {
        Ok(updates) => Some(updates),
        Err(err) => {
            says_where(&err);
            None
        }
    };
    let body = match serde_json::from_slice::<SyncBody>(data) {
        Ok(body) => Some(body),
        Err(err) => {
            says_where(&err);
            None
        }
    };
    if let Some(updates) = updates {
        check_updates(&updates, None, IfMatch::NONE);
    }
    if let Some(body) = body {
        let personality = checked_id(&body.personality, PersonalityId::new, PersonalityId::as_str);
        let user = checked_id(&body.user, UserId::new, UserId::as_str);
        if let (Some(personality), Some(user)) = (personality, user) {
            let if_match = body.if_match.unwrap_or_default();
            check_updates(&body.updates, Some((personality, user)), if_match);
        }
    }
});

/// A `serde_json` error names where in the text it is: `memory sync` and the HTTP API quote it.
fn says_where(err: &serde_json::Error) {
    let message = err.to_string();
    assert!(!message.trim().is_empty());
    assert!(
        err.line() >= 1 && message.contains(&format!("line {}", err.line())),
        "the error does not say where: {message:?}"
    );
}

/// An id from a body: accepted as written, or refused as `InvalidId` quoting it.
fn checked_id<T>(
    text: &str,
    new: impl Fn(String) -> Result<T, MemoryError>,
    as_str: impl Fn(&T) -> &str,
) -> Option<T> {
    match new(text.to_owned()) {
        Ok(id) => {
            assert_eq!(as_str(&id), text);
            Some(id)
        }
        Err(err) => {
            assert!(
                matches!(&err, MemoryError::InvalidId { value, .. } if value == text),
                "{err:?} for {text:?}"
            );
            assert!(!err.to_string().trim().is_empty());
            None
        }
    }
}

fn check_updates(
    updates: &[MemoryUpdate],
    ids: Option<(PersonalityId, UserId)>,
    if_match: IfMatch,
) {
    // Parse, render, parse: the same updates, and the same rendering.
    let json = serde_json::to_string(updates).expect("updates serialize");
    let again: Vec<MemoryUpdate> = serde_json::from_str(&json).expect("a rendering parses");
    assert_eq!(again, updates);
    assert_eq!(
        serde_json::to_string(&again).expect("updates serialize"),
        json
    );
    for update in updates {
        let value = serde_json::to_value(update).expect("an update serializes");
        assert_eq!(value["action"], update.action());
        assert_eq!(value["store"], update.store().to_string());
    }

    let (personality, user) = ids.unwrap_or_else(|| {
        (
            PersonalityId::new("ada").expect("an id"),
            UserId::new("grace").expect("an id"),
        )
    });
    let capped = Caps {
        soft: Some(48),
        hard: Some(96),
    };
    for budgets in [
        Budgets::default(),
        Budgets {
            memory: capped,
            user: capped,
            ..Budgets::default()
        },
    ] {
        let ctx = MemoryContext::new(personality.clone(), user.clone()).with_budgets(budgets);
        check_planned(updates, &ctx, &if_match);
    }
}

/// Plans and applies `updates`, checking every outcome against the model.
fn check_planned(updates: &[MemoryUpdate], ctx: &MemoryContext, if_match: &IfMatch) {
    let first_malformed = updates.iter().position(malformed);
    let batches = match plan_sync(ctx, updates, if_match) {
        Err(err) => {
            let index = first_malformed
                .unwrap_or_else(|| panic!("plan_sync refused well-formed updates: {err}"));
            let document = ctx.document(updates[index].store());
            assert!(
                matches!(&err, MemoryError::InvalidUpdate { index: i, document: d, reason }
                    if *i == index && *d == document && !reason.trim().is_empty()),
                "{err:?}"
            );
            names(&err, &document.to_string(), Some(index));
            return;
        }
        Ok(batches) => batches,
    };
    assert_eq!(first_malformed, None, "a malformed update was planned");
    for batch in &batches {
        let store = batch.document().store();
        let text = match store {
            Store::Memory => MEMORY,
            Store::User => USER,
        };
        let before = Document {
            id: batch.document().clone(),
            text: text.to_owned(),
            version: Version::new(sha256_hex(text)),
            location: "fuzz://document".to_owned(),
            modified: None,
        };
        let mine: Vec<(usize, &MemoryUpdate)> = updates
            .iter()
            .enumerate()
            .filter(|(_, u)| u.store() == store)
            .collect();
        let stale = if_match
            .for_store(store)
            .is_some_and(|v| *v != before.version);
        let caps = ctx.budgets.for_store(store);
        let expected = model(text, &mine, caps);
        match batch.apply(before.clone(), &[]) {
            Err(err) => {
                let index = match (&err, &expected) {
                    (MemoryError::Conflict { current, .. }, _) => {
                        assert!(stale, "a conflict without a stale precondition: {err}");
                        assert_eq!(current, &before.version);
                        None
                    }
                    _ if stale => panic!("a stale version gave {err:?}"),
                    (MemoryError::NoMatch { index, old, .. }, Err(Refusal::NoMatch(i))) => {
                        assert_eq!(index, i);
                        assert!(
                            matches!(&updates[*index], MemoryUpdate::Edit { old: o, .. } if o == old),
                            "NoMatch names update #{index}, not that edit"
                        );
                        Some(*index)
                    }
                    (
                        MemoryError::AmbiguousMatch { index, count, .. },
                        Err(Refusal::Ambiguous(i, c)),
                    ) => {
                        assert_eq!((index, count), (i, c));
                        Some(*index)
                    }
                    (
                        MemoryError::HardCapExceeded {
                            bytes, hard_cap, ..
                        },
                        Err(Refusal::HardCap(b)),
                    ) => {
                        assert_eq!(bytes, b);
                        assert!(*bytes > *hard_cap && *bytes > text.len());
                        None
                    }
                    _ => panic!("got {err:?}, the model says {expected:?}"),
                };
                names(&err, &batch.document().to_string(), index);
            }
            Ok(write) => {
                assert!(!stale, "applied over a stale precondition");
                let outcome = expected
                    .unwrap_or_else(|refusal| panic!("applied, the model says {refusal:?}"));
                let after = write.new_text().unwrap_or(text);
                assert_eq!(after, outcome.text);
                assert_eq!(write.new_text().is_some(), outcome.text != text);
                let report = write.report(Version::new("after"));
                assert_eq!(report.bytes_after, after.len());
                assert_eq!(report.sha256_after, sha256_hex(after));
                assert_eq!(report.lines_removed, outcome.lines_removed);
                assert_eq!(
                    report.over_soft_cap,
                    caps.soft.is_some_and(|soft| after.len() > soft)
                );
            }
        }
    }
}

/// The error's message names `document`, and the update at `index` when it is about one.
fn names(err: &MemoryError, document: &str, index: Option<usize>) {
    let message = err.to_string();
    assert!(
        message.contains(document),
        "{message:?} does not name {document}"
    );
    if let Some(index) = index {
        assert!(
            message.contains(&format!("update #{index} ")),
            "{message:?} does not name update #{index}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// The model: the update table of CONTRACT.md, written apart from `apply_batch`, shared with
// memory-core's no_panic_on_update_json test.

#[path = "../../memory-core/tests/support/update_model.rs"]
mod update_model;
use update_model::{Refusal, malformed, model};
