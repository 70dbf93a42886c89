//! Model-based testing: random update sequences go through the provider under test and through
//! [`InMemoryProvider`], and both must produce identical documents, reports and errors.

use std::collections::HashMap;
use std::future::Future;

use memory_core::{
    Budgets, Caps, DocumentId, DocumentReport, IfMatch, InMemoryProvider, MemoryContext,
    MemoryError, MemoryProvider, MemoryScope, MemoryUpdate, Store, SyncReport, Version,
};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

use crate::IntoFixture;
use crate::support::ctx;

/// Which precondition a step sends.
#[derive(Debug, Clone, Copy)]
enum Guard {
    None,
    /// The versions of the step's documents just before it.
    Current,
    /// The versions of the step's documents before the previous step.
    Stale,
}

/// One `sync` call of a random sequence.
#[derive(Debug, Clone)]
struct Step {
    personality: &'static str,
    user: &'static str,
    scope: MemoryScope,
    capped: bool,
    guard: Guard,
    updates: Vec<MemoryUpdate>,
}

impl Step {
    fn context(&self) -> MemoryContext {
        let budgets = if self.capped {
            // Small enough that random sequences cross both caps.
            let caps = Caps {
                soft: Some(24),
                hard: Some(64),
            };
            Budgets {
                memory: caps,
                user: caps,
                ..Budgets::default()
            }
        } else {
            Budgets::default()
        };
        ctx(self.personality, self.user)
            .with_scope(self.scope)
            .with_budgets(budgets)
    }
}

pub(crate) const TEXTS: &[&str] = &[
    "alpha",
    "beta",
    "alpha beta",
    "  gamma\n",
    "",
    " \n",
    "日本",
    "🙂 emoji",
    "a",
    "\n\nalpha\n\n",
    "line1\nline2",
    "alpha\nalpha",
];
const NEEDLES: &[&str] = &[
    "alpha", "a", "beta", "日", "", "line", "\n", "🙂", "alpha\n",
];

/// A random update of one of `stores`, with texts and needles that cross lines, blanks and
/// multibyte characters, so that many are refused.
pub(crate) fn update(stores: &'static [Store]) -> impl Strategy<Value = MemoryUpdate> {
    let store = proptest::sample::select(stores);
    let text = proptest::sample::select(TEXTS);
    let needle = proptest::sample::select(NEEDLES);
    (0..4u8, store, text, needle).prop_map(|(action, store, text, needle)| match action {
        0 => MemoryUpdate::add(store, text),
        1 => MemoryUpdate::replace(store, text),
        2 => MemoryUpdate::remove(store, needle),
        _ => MemoryUpdate::edit(store, needle, text),
    })
}

fn step() -> impl Strategy<Value = Step> {
    (
        proptest::sample::select(&["ada", "bob"][..]),
        proptest::sample::select(&["u1", "u2"][..]),
        prop_oneof![Just(MemoryScope::PerPersonality), Just(MemoryScope::Global)],
        any::<bool>(),
        prop_oneof![3 => Just(Guard::None), 1 => Just(Guard::Current), 1 => Just(Guard::Stale)],
        proptest::collection::vec(update(&[Store::Memory, Store::User]), 1..4),
    )
        .prop_map(|(personality, user, scope, capped, guard, updates)| Step {
            personality,
            user,
            scope,
            capped,
            guard,
            updates,
        })
}

/// What must agree between two providers: reports without versions and locations (those are
/// the backend's own), and errors by kind and message.
#[derive(Debug, PartialEq)]
enum Outcome {
    Written(Vec<DocumentReport>),
    Refused(String),
}

fn outcome(result: Result<SyncReport, MemoryError>) -> Outcome {
    match result {
        Ok(report) => Outcome::Written(
            report
                .documents
                .into_iter()
                .map(|mut d| {
                    d.location.clear();
                    d.version_before = Version::new("");
                    d.version_after = Version::new("");
                    d
                })
                .collect(),
        ),
        // Conflict messages carry backend versions: compare the document only.
        Err(MemoryError::Conflict { document, .. }) => {
            Outcome::Refused(format!("conflict on {document}"))
        }
        Err(e) => Outcome::Refused(e.to_string()),
    }
}

/// The version of every document the steps can touch, as this provider reports them now.
async fn versions<P: MemoryProvider + ?Sized>(p: &P) -> HashMap<DocumentId, Version> {
    let mut out = HashMap::new();
    for id in all_documents() {
        let version = p.read(&id).await.expect("read").version;
        out.insert(id, version);
    }
    out
}

/// Plays `steps` on `provider`; returns each step's outcome and the final documents.
async fn play<P: MemoryProvider + ?Sized>(
    provider: &P,
    steps: &[Step],
) -> (Vec<Outcome>, Vec<(DocumentId, String)>) {
    let mut outcomes = Vec::new();
    let mut previous: Option<HashMap<DocumentId, Version>> = None;
    for step in steps {
        let ctx = step.context();
        let now = versions(provider).await;
        // Versions of this step's own documents: as they are now, or as they were before the
        // previous step (stale when that step wrote them).
        let seen = match (step.guard, &previous) {
            (Guard::None, _) => None,
            (Guard::Stale, Some(before)) => Some(before),
            (Guard::Current | Guard::Stale, _) => Some(&now),
        };
        let guard = seen.map_or(IfMatch::NONE, |seen| IfMatch {
            memory: seen.get(&ctx.document(Store::Memory)).cloned(),
            user: seen.get(&ctx.document(Store::User)).cloned(),
            ..IfMatch::NONE
        });
        outcomes.push(outcome(provider.sync(&ctx, &step.updates, &guard).await));
        previous = Some(now);
    }
    let mut documents = Vec::new();
    for id in all_documents() {
        let text = provider.read(&id).await.expect("read").text;
        documents.push((id, text));
    }
    (outcomes, documents)
}

fn all_documents() -> Vec<DocumentId> {
    let mut ids = vec![DocumentId::GlobalMemory];
    for p in ["ada", "bob"] {
        ids.push(ctx(p, "u1").document(Store::Memory));
    }
    for u in ["u1", "u2"] {
        ids.push(ctx("ada", u).document(Store::User));
    }
    ids
}

/// Random sequences of 1 to 8 `sync` calls (random personality, user, scope, caps,
/// preconditions and updates) give the same outcomes and documents on the provider from `setup`
/// as on the reference model. `PROPTEST_CASES` sets the number of sequences (default 256).
pub fn matches_reference_model<P, F, Fut>(setup: F)
where
    P: MemoryProvider + ?Sized,
    F: Fn() -> Fut,
    Fut: Future<Output: IntoFixture<P>>,
{
    let Some((mut runner, runtime)) = property_runner(&setup, 256) else {
        return; // setup explained the skip
    };
    let result = runner.run(&proptest::collection::vec(step(), 1..8), |steps| {
        runtime.block_on(async {
            let fixture = setup().await.into_fixture().expect("the service went away");
            let (got, got_docs) = play(&*fixture.provider(), &steps).await;
            let (want, want_docs) = play(&InMemoryProvider::new(), &steps).await;
            prop_assert_eq!(got, want, "outcomes differ from the reference model");
            prop_assert_eq!(
                got_docs,
                want_docs,
                "documents differ from the reference model"
            );
            Ok::<(), TestCaseError>(())
        })
    });
    if let Err(e) = result {
        panic!("the provider diverges from the reference model: {e}");
    }
}

/// What a property test over fixtures from `setup` runs on: a proptest runner making
/// `PROPTEST_CASES` cases (else `default_cases`), and a runtime to block on; `None` when
/// `setup` skips (its backend's service is missing, and it said so).
pub(crate) fn property_runner<P, F, Fut>(
    setup: &F,
    default_cases: u32,
) -> Option<(TestRunner, tokio::runtime::Runtime)>
where
    P: MemoryProvider + ?Sized,
    F: Fn() -> Fut,
    Fut: Future<Output: IntoFixture<P>>,
{
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default_cases);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(setup()).into_fixture()?;
    let runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    Some((runner, runtime))
}
