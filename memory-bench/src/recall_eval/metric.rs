//! The metric: recall@k of a question, the cutoffs it is reported at, and the table of means
//! per question category.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

/// The cutoffs reported when k reaches them (the LoCoMo paper's and the data README's).
const CUTOFFS: [usize; 4] = [1, 5, 10, 25];

/// Recall@k of one question: the share of `evidence` among the ids of the first `k` results
/// (`ranked`, best first, each result's ids). `None` for a question without evidence, which
/// has no recall to measure.
pub fn recall_at(
    evidence: &BTreeSet<String>,
    ranked: &[&BTreeSet<String>],
    k: usize,
) -> Option<f64> {
    if evidence.is_empty() {
        return None;
    }
    let found = evidence
        .iter()
        .filter(|id| ranked.iter().take(k).any(|ids| ids.contains(*id)))
        .count();
    Some(found as f64 / evidence.len() as f64)
}

/// The cutoffs reported for a search of `k`: the standard ones up to k, and k itself.
pub fn cutoffs(k: usize) -> Vec<usize> {
    let mut at: Vec<usize> = CUTOFFS.into_iter().filter(|&c| c <= k).collect();
    if !at.contains(&k) {
        at.push(k);
    }
    at
}

/// One question's recall at each cutoff.
#[derive(Debug, Clone, PartialEq)]
pub struct Scored {
    pub category: u8,
    pub category_name: String,
    /// Recall at each of the run's cutoffs, in order.
    pub recall: Vec<f64>,
}

/// The markdown table: one row per category (in category order, named as the data names it),
/// then "all"; mean recall at each cutoff, 3 decimals.
pub fn table(scored: &[Scored], cutoffs: &[usize]) -> String {
    let mut rows: BTreeMap<u8, (&str, Vec<&Scored>)> = BTreeMap::new();
    for s in scored {
        rows.entry(s.category)
            .or_insert_with(|| (&s.category_name, Vec::new()))
            .1
            .push(s);
    }
    let mut md = String::new();
    let headers: Vec<String> = cutoffs.iter().map(|c| format!("R@{c}")).collect();
    let _ = writeln!(md, "| category | questions | {} |", headers.join(" | "));
    let _ = writeln!(md, "| --- | --- |{}", " --- |".repeat(cutoffs.len()));
    let mut row = |label: String, of: &[&Scored]| {
        let means: Vec<String> = (0..cutoffs.len())
            .map(|i| {
                let sum: f64 = of.iter().map(|s| s.recall[i]).sum();
                format!("{:.3}", sum / of.len().max(1) as f64)
            })
            .collect();
        let _ = writeln!(md, "| {label} | {} | {} |", of.len(), means.join(" | "));
    };
    for (category, (name, of)) in &rows {
        row(format!("{category} {name}"), of);
    }
    row("all".to_owned(), &scored.iter().collect::<Vec<_>>());
    md
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(ids: &[&str]) -> BTreeSet<String> {
        ids.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn recall_at_k_is_the_share_of_evidence_in_the_top_k() {
        let evidence = set(&["D1:1", "D2:2", "D3:3", "D4:4"]);
        let (a, b, c) = (set(&["D9:9"]), set(&["D2:2", "D3:3"]), set(&["D1:1"]));
        let ranked = [&a, &b, &c, &b];
        assert_eq!(recall_at(&evidence, &ranked, 1), Some(0.0));
        assert_eq!(recall_at(&evidence, &ranked, 2), Some(0.5));
        assert_eq!(recall_at(&evidence, &ranked, 3), Some(0.75));
        // An id found twice counts once; k beyond the results changes nothing.
        assert_eq!(recall_at(&evidence, &ranked, 25), Some(0.75));
        assert_eq!(recall_at(&evidence, &[], 5), Some(0.0));
        assert_eq!(recall_at(&set(&[]), &ranked, 5), None);
    }

    #[test]
    fn the_table_averages_per_category_then_over_all() {
        let scored = |category: u8, name: &str, recall: [f64; 2]| Scored {
            category,
            category_name: name.into(),
            recall: recall.to_vec(),
        };
        let md = table(
            &[
                scored(4, "single-hop", [1.0, 1.0]),
                scored(1, "multi-hop", [0.0, 0.5]),
                scored(4, "single-hop", [0.0, 1.0]),
            ],
            &[1, 5],
        );
        assert_eq!(
            md,
            "| category | questions | R@1 | R@5 |\n\
             | --- | --- | --- | --- |\n\
             | 1 multi-hop | 1 | 0.000 | 0.500 |\n\
             | 4 single-hop | 2 | 0.500 | 1.000 |\n\
             | all | 3 | 0.333 | 0.833 |\n"
        );
    }

    #[test]
    fn cutoffs_stop_at_k_and_include_it() {
        assert_eq!(cutoffs(25), [1, 5, 10, 25]);
        assert_eq!(cutoffs(8), [1, 5, 8]);
        assert_eq!(cutoffs(50), [1, 5, 10, 25, 50]);
        assert_eq!(cutoffs(1), [1]);
    }
}
