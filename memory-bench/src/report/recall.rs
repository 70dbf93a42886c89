//! The vector provider's recall: how fast entries go in and queries come back at each size,
//! and how well it finds the evidence of questions on real conversations.

use std::fmt::Write as _;

use super::Report;
use crate::stats::ms;

impl Report<'_> {
    /// The recall section: ingest and query latency at each size; empty when not measured.
    pub(super) fn recall(&self) -> String {
        if self.recall.is_empty() {
            return String::new();
        }
        let mut md = String::new();
        let _ = writeln!(md, "\n## Recall (vector)\n");
        let _ = writeln!(
            md,
            "One MEMORY.md grown to each size in turn; ingest counts the entries added since \
             the previous size (embedding, LanceDB writes, index optimisation). A query is \
             `memory_search`, k 8: the index query (embedding the query, vector and BM25 \
             candidates, fusion by similarity and query-word coverage), then the entries' \
             text from the source document. The index query is also timed alone; it reads \
             the source document too, whose entries weigh the query's words.\n"
        );
        let _ = writeln!(
            md,
            "| entries | ingest entries/s | query p50 | query p95 | index query p50 | index query p95 |"
        );
        let _ = writeln!(md, "|---|---|---|---|---|---|");
        for r in self.recall {
            let _ = writeln!(
                md,
                "| {} | {:.0} | {} | {} | {} | {} |",
                r.entries,
                r.ingest_per_second,
                ms(r.queries.quantile_ms(0.5)),
                ms(r.queries.quantile_ms(0.95)),
                ms(r.index_queries.quantile_ms(0.5)),
                ms(r.index_queries.quantile_ms(0.95))
            );
        }
        let _ = writeln!(md, "\n![recall query latency](benchmarks/recall.svg)\n");
        md
    }

    /// The recall quality section: `recall-eval` on the LoCoMo conversations; empty when not
    /// measured.
    pub(super) fn quality(&self) -> String {
        if self.quality.is_empty() {
            return String::new();
        }
        let mut md = String::new();
        let _ = writeln!(md, "## Recall quality (LoCoMo)\n");
        let _ = writeln!(
            md,
            "`memory-bench recall-eval` on the conversations in `{}` (the protocol is in \
             that directory's README): one MEMORY.md per conversation, one entry per dialog \
             turn or per observation, each question the query; recall@k is the share of \
             the question's evidence turns among the top k. `hybrid` is what an agent's \
             `memory_search` returns; `full-text` (LanceDB's BM25, stemmed, stop words \
             dropped) and `vector` are its two halves alone.\n",
            self.args.recall_data.display()
        );
        for evaluated in self.quality {
            let _ = writeln!(md, "{}\n", evaluated.summary);
            let _ = writeln!(md, "{}", evaluated.table);
            let _ = writeln!(md, "{}\n", evaluated.timing);
        }
        md
    }
}
