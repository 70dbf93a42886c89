//! The notes section: a note's add against a document's, a scope's listing, and prefetch
//! with a scope full of notes against one without.

use std::fmt::Write as _;

use super::{Report, ratio};
use crate::stats::ms;
use crate::workloads::NotesMeasured;

/// The goals of issue 63: a note's add within 1.2× of a document's p50, a scope's listing in
/// 5 ms p50, prefetch with the notes within 1.2× of prefetch without.
pub(super) const NOTE_ADD_RATIO: f64 = 1.2;
pub(super) const LISTING_MS: f64 = 5.0;
pub(super) const PREFETCH_RATIO: f64 = 1.2;

impl Report<'_> {
    pub(super) fn notes(&self) -> String {
        let measured: Vec<(&str, &NotesMeasured)> = self
            .measured
            .iter()
            .map(|m| (m.provider, &m.notes))
            .collect();
        notes_section(self.args.notes, &measured)
    }

    /// The notes goals' rows for the goals table: (figure, value, goal, met).
    pub(super) fn notes_goals(&self) -> Vec<(String, String, &'static str, bool)> {
        let mut rows = Vec::new();
        for m in self.measured {
            let n = &m.notes;
            let add = n.note_add.quantile_ms(0.5) / n.document_add.quantile_ms(0.5);
            rows.push((
                format!("{}, a note's add ÷ a document's, p50", m.provider),
                format!("{add:.2}×"),
                "<= 1.2×",
                add <= NOTE_ADD_RATIO,
            ));
            let listing = n.listing.quantile_ms(0.5);
            rows.push((
                format!("{}, listing {} notes, p50", m.provider, n.listed),
                format!("{} ms", ms(listing)),
                "<= 5 ms",
                listing <= LISTING_MS,
            ));
            let prefetch = n.prefetch_with.quantile_ms(0.5) / n.prefetch_without.quantile_ms(0.5);
            rows.push((
                format!(
                    "{}, prefetch with {} notes ÷ without, p50",
                    m.provider, n.listed
                ),
                format!("{prefetch:.2}×"),
                "<= 1.2×",
                prefetch <= PREFETCH_RATIO,
            ));
        }
        rows
    }
}

/// The notes section for a scope of `notes` notes, one row per provider measured: the
/// report's, and what `--notes-only` prints.
pub fn notes_section(notes: usize, measured: &[(&str, &NotesMeasured)]) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "## Notes\n");
    let _ = writeln!(
        md,
        "A note is a document beside MEMORY.md: one add to it against one add to MEMORY.md \
         (alternating, same scope); listing a scope of {notes} notes (path, bytes, version, last \
         write and description of each); and a prefetch (with a query) whose scope holds \
         those notes, against one whose scope holds none, with the same 4 KiB MEMORY.md \
         (alternating). Goals: a note's add within {NOTE_ADD_RATIO}× of a document's p50, \
         the listing at most {LISTING_MS} ms p50, the prefetch within {PREFETCH_RATIO}×.\n"
    );
    let _ = writeln!(
        md,
        "| provider | document add | note add | ratio | listing {notes} notes | prefetch without | prefetch with | ratio |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|---|---|");
    for (provider, n) in measured {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            provider,
            n.document_add.percentiles(),
            n.note_add.percentiles(),
            ratio(n.note_add.quantile_ms(0.5), n.document_add.quantile_ms(0.5)),
            n.listing.percentiles(),
            n.prefetch_without.percentiles(),
            n.prefetch_with.percentiles(),
            ratio(
                n.prefetch_with.quantile_ms(0.5),
                n.prefetch_without.quantile_ms(0.5)
            ),
        );
    }
    md.push('\n');
    md
}
