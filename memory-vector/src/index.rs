//! The LanceDB table of entries: one row per distinct paragraph of each indexed document.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use arrow_array::types::Float32Type;
use arrow_array::{Array, FixedSizeListArray, Float32Array, RecordBatch, StringArray, UInt32Array};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use futures::TryStreamExt;
use lancedb::index::Index as IndexKind;
use lancedb::index::scalar::{FtsIndexBuilder, FullTextSearchQuery};
use lancedb::index::vector::IvfHnswSqIndexBuilder;
use lancedb::query::{ExecutableQuery, QueryBase, Select};
use lancedb::table::{CompactionOptions, OptimizeAction, OptimizeOptions};
use lancedb::{DistanceType, Table};
use memory_core::MemoryError;

use crate::embed::DIMENSIONS;
use crate::entries::Entry;

const TABLE: &str = "entries";

/// An entry a search found: the scope (its document's path) and the entry's hash.
pub(crate) type Hit = (String, String);

/// One indexed entry, as read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Row {
    pub hash: String,
    pub model: String,
}

/// The entries table.
pub(crate) struct EntryTable {
    table: Table,
    location: String,
    /// Rows from which on vector search goes through an ANN index instead of brute force.
    ann_index_rows: usize,
    /// Whether the full-text index is known to exist (indices are never dropped, so once seen
    /// it need not be looked up again).
    text_index: AtomicBool,
}

impl EntryTable {
    /// Opens the table in `dir`, creating it (and the directory) if needed.
    ///
    /// Reads see other processes' writes: each read checks for a newer table version first,
    /// since the coverage record a query trusts may have been written by another process.
    pub async fn open(dir: &Path, ann_index_rows: usize) -> Result<Self, MemoryError> {
        let location = dir.display().to_string();
        let failed = |err: lancedb::Error| MemoryError::unavailable(&location, err);
        std::fs::create_dir_all(dir).map_err(|err| MemoryError::unavailable(&location, err))?;
        let db = lancedb::connect(&location)
            .read_consistency_interval(Duration::ZERO)
            .execute()
            .await
            .map_err(failed)?;
        let names = db.table_names().execute().await.map_err(failed)?;
        let table = if names.iter().any(|name| name == TABLE) {
            db.open_table(TABLE).execute().await.map_err(failed)?
        } else {
            match db.create_empty_table(TABLE, schema()).execute().await {
                Ok(table) => table,
                // Another process created it meanwhile.
                Err(_) => db.open_table(TABLE).execute().await.map_err(failed)?,
            }
        };
        Ok(EntryTable {
            table,
            location,
            ann_index_rows,
            text_index: AtomicBool::new(false),
        })
    }

    fn failed(&self, err: lancedb::Error) -> MemoryError {
        MemoryError::unavailable(format!("the recall index at {}", self.location), err)
    }

    /// The entries indexed for `scope` (a document's path).
    pub async fn rows(&self, scope: &str) -> Result<Vec<Row>, MemoryError> {
        let batches = self
            .run(
                self.table
                    .query()
                    .only_if(scope_filter(scope))
                    .select(Select::columns(&["hash", "model"])),
            )
            .await?;
        Ok(batches
            .iter()
            .flat_map(|batch| {
                let hashes = strings(batch, "hash");
                let models = strings(batch, "model");
                (0..batch.num_rows())
                    .map(|i| Row {
                        hash: hashes.value(i).to_owned(),
                        model: models.value(i).to_owned(),
                    })
                    .collect::<Vec<_>>()
            })
            .collect())
    }

    /// Whether any row was embedded by a model other than `model`.
    pub async fn has_rows_of_other_models(&self, model: &str) -> Result<bool, MemoryError> {
        let others = self
            .table
            .count_rows(Some(format!("model != {}", sql_string(model))))
            .await
            .map_err(|err| self.failed(err))?;
        Ok(others > 0)
    }

    /// Every scope with at least one row.
    pub async fn scopes(&self) -> Result<Vec<String>, MemoryError> {
        let batches = self
            .run(self.table.query().select(Select::columns(&["scope"])))
            .await?;
        let mut scopes: Vec<String> = batches
            .iter()
            .flat_map(|batch| {
                let scopes = strings(batch, "scope");
                (0..batch.num_rows())
                    .map(|i| scopes.value(i).to_owned())
                    .collect::<Vec<_>>()
            })
            .collect();
        scopes.sort();
        scopes.dedup();
        Ok(scopes)
    }

    /// Deletes the rows of `scope` embedded by `model` whose hash is in `hashes`.
    pub async fn delete(
        &self,
        scope: &str,
        model: &str,
        hashes: &[String],
    ) -> Result<(), MemoryError> {
        if hashes.is_empty() {
            return Ok(());
        }
        let hashes: Vec<String> = hashes.iter().map(|h| sql_string(h)).collect();
        self.delete_where(format!(
            "{} AND model = {} AND hash IN ({})",
            scope_filter(scope),
            sql_string(model),
            hashes.join(", ")
        ))
        .await
    }

    /// Deletes the rows of `scope` embedded by any model but `model`.
    pub async fn delete_other_models(&self, scope: &str, model: &str) -> Result<(), MemoryError> {
        self.delete_where(format!(
            "{} AND model != {}",
            scope_filter(scope),
            sql_string(model)
        ))
        .await
    }

    async fn delete_where(&self, predicate: String) -> Result<(), MemoryError> {
        self.table
            .delete(predicate.as_str())
            .await
            .map_err(|err| self.failed(err))?;
        Ok(())
    }

    /// Adds `added` (entries with their vectors) to `scope`, in one table version.
    pub async fn add(
        &self,
        scope: &str,
        store: &str,
        model: &str,
        added: &[(Entry, Vec<f32>)],
    ) -> Result<(), MemoryError> {
        if added.is_empty() {
            return Ok(());
        }
        let batch = batch(scope, store, model, added).map_err(|err| self.failed(err))?;
        self.table
            .add(batch)
            .execute()
            .await
            .map_err(|err| self.failed(err))?;
        Ok(())
    }

    /// The table's current version: every write adds one.
    pub async fn version(&self) -> Result<u64, MemoryError> {
        self.table.version().await.map_err(|err| self.failed(err))
    }

    /// How many table versions are kept on disk.
    pub async fn versions_kept(&self) -> Result<usize, MemoryError> {
        let versions = self
            .table
            .list_versions()
            .await
            .map_err(|err| self.failed(err))?;
        Ok(versions.len())
    }

    /// Merges small files, builds the ANN index once the table reaches its size, brings the
    /// indices up to date (rows added since an index was built are searched by brute force
    /// until then), then drops every version but the newest, so the table stays small and
    /// fast under churn. Call it with the index lock held: no other process is writing then.
    ///
    /// A reader in another process still on a dropped version fails its query; the provider
    /// answers that query with the whole document, so dropping eagerly never hides an entry.
    pub async fn optimize(&self) -> Result<(), MemoryError> {
        let rows = self
            .table
            .count_rows(None)
            .await
            .map_err(|err| self.failed(err))?;
        let build = match self.vector_index_rows().await? {
            None => rows >= self.ann_index_rows,
            // More rows outside the index than in it: building it afresh over all of them is
            // cheaper than merging them in (at 100k entries over an index of 10k: ~75 s to
            // merge), and trains its partitions on the whole table rather than a tenth of it.
            Some((indexed, unindexed)) => unindexed > indexed,
        };
        if build {
            let ann = IvfHnswSqIndexBuilder::default().distance_type(DistanceType::Cosine);
            self.table
                .create_index(&["vector"], IndexKind::IvfHnswSq(ann))
                .replace(true)
                .execute()
                .await
                .map_err(|err| self.failed(err))?;
        }
        for action in [
            OptimizeAction::Compact {
                options: CompactionOptions::default(),
                remap_options: None,
            },
            OptimizeAction::Index(OptimizeOptions::default()),
            OptimizeAction::Prune {
                older_than: Some(chrono::Duration::zero()),
                delete_unverified: None,
                error_if_tagged_old_versions: None,
            },
        ] {
            self.table
                .optimize(action)
                .await
                .map_err(|err| self.failed(err))?;
        }
        Ok(())
    }

    /// Deletes every row of `scope`.
    pub async fn clear(&self, scope: &str) -> Result<(), MemoryError> {
        self.delete_where(scope_filter(scope)).await
    }

    /// The `limit` entries of `scopes` embedded by `model` nearest to `vector`, best first,
    /// each as its scope and hash with its cosine similarity to `vector`. Rows of another model
    /// are never ranked: their vectors do not compare with this model's.
    pub async fn nearest(
        &self,
        scopes: &[String],
        model: &str,
        vector: &[f32],
        limit: usize,
    ) -> Result<Vec<(Hit, f32)>, MemoryError> {
        let batches = self
            .run(
                self.table
                    .query()
                    .nearest_to(vector)
                    .map_err(|err| self.failed(err))?
                    .distance_type(DistanceType::Cosine)
                    .only_if(format!(
                        "{} AND model = {}",
                        scopes_filter(scopes),
                        sql_string(model)
                    ))
                    .select(Select::columns(&["scope", "hash"]))
                    .limit(limit),
            )
            .await?;
        let mut nearest = Vec::new();
        for batch in &batches {
            let Some(distances) = batch
                .column_by_name("_distance")
                .and_then(|c| c.as_any().downcast_ref::<Float32Array>())
            else {
                return Err(MemoryError::unavailable(
                    format!("the recall index at {}", self.location),
                    "a vector query returned no _distance column",
                ));
            };
            // LanceDB's cosine distance is 1 - cosine similarity.
            nearest.extend(
                hits(batch)
                    .into_iter()
                    .zip((0..batch.num_rows()).map(|i| 1.0 - distances.value(i))),
            );
        }
        Ok(nearest)
    }

    /// The `limit` entries of `scopes` that best match `query` by BM25, best first, each as its
    /// scope and hash; none before the full-text index exists (the first catch-up builds it).
    pub async fn full_text(
        &self,
        scopes: &[String],
        query: &str,
        limit: usize,
    ) -> Result<Vec<Hit>, MemoryError> {
        if !self.has_text_index().await? {
            return Ok(Vec::new());
        }
        let batches = self
            .run(
                self.table
                    .query()
                    .full_text_search(FullTextSearchQuery::new(query.to_owned()))
                    .only_if(scopes_filter(scopes))
                    .select(Select::columns(&["scope", "hash"]))
                    .limit(limit),
            )
            .await?;
        Ok(batches.iter().flat_map(hits).collect())
    }

    /// Whether `column` has an index.
    /// The rows inside and outside the vector index, or `None` when there is none.
    async fn vector_index_rows(&self) -> Result<Option<(usize, usize)>, MemoryError> {
        let indices = self
            .table
            .list_indices()
            .await
            .map_err(|err| self.failed(err))?;
        let Some(index) = indices.iter().find(|index| index.columns == ["vector"]) else {
            return Ok(None);
        };
        let stats = self
            .table
            .index_stats(&index.name)
            .await
            .map_err(|err| self.failed(err))?;
        // An index without statistics is left as it is.
        Ok(Some(stats.map_or((0, 0), |stats| {
            (stats.num_indexed_rows, stats.num_unindexed_rows)
        })))
    }

    pub async fn has_index_on(&self, column: &str) -> Result<bool, MemoryError> {
        let indices = self
            .table
            .list_indices()
            .await
            .map_err(|err| self.failed(err))?;
        Ok(indices.iter().any(|index| index.columns == [column]))
    }

    /// Runs `query` to completion.
    async fn run(&self, query: impl ExecutableQuery) -> Result<Vec<RecordBatch>, MemoryError> {
        query
            .execute()
            .await
            .map_err(|err| self.failed(err))?
            .try_collect()
            .await
            .map_err(|err| self.failed(err))
    }

    async fn has_text_index(&self) -> Result<bool, MemoryError> {
        if self.text_index.load(Ordering::Relaxed) {
            return Ok(true);
        }
        let exists = self.has_index_on("text").await?;
        self.text_index.store(exists, Ordering::Relaxed);
        Ok(exists)
    }

    /// Builds the full-text index if the table has rows and no such index yet. A write: call
    /// it with the index lock held.
    pub async fn ensure_text_index(&self) -> Result<(), MemoryError> {
        if self.has_text_index().await? {
            return Ok(());
        }
        let rows = self
            .table
            .count_rows(None)
            .await
            .map_err(|err| self.failed(err))?;
        if rows == 0 {
            return Ok(());
        }
        self.table
            .create_index(&["text"], IndexKind::FTS(FtsIndexBuilder::default()))
            .execute()
            .await
            .map_err(|err| self.failed(err))?;
        self.text_index.store(true, Ordering::Relaxed);
        Ok(())
    }
}

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("scope", DataType::Utf8, false),
        Field::new("store", DataType::Utf8, false),
        Field::new("hash", DataType::Utf8, false),
        Field::new("text", DataType::Utf8, false),
        Field::new(
            "vector",
            DataType::FixedSizeList(
                Arc::new(Field::new("item", DataType::Float32, true)),
                DIMENSIONS as i32,
            ),
            false,
        ),
        Field::new("model", DataType::Utf8, false),
        Field::new("position", DataType::UInt32, false),
    ]))
}

fn batch(
    scope: &str,
    store: &str,
    model: &str,
    added: &[(Entry, Vec<f32>)],
) -> Result<RecordBatch, lancedb::Error> {
    let n = added.len();
    let repeat = |value: &str| Arc::new(StringArray::from(vec![value; n])) as Arc<dyn Array>;
    let vectors = FixedSizeListArray::from_iter_primitive::<Float32Type, _, _>(
        added
            .iter()
            .map(|(_, vector)| Some(vector.iter().copied().map(Some))),
        DIMENSIONS as i32,
    );
    RecordBatch::try_new(
        schema(),
        vec![
            repeat(scope),
            repeat(store),
            Arc::new(StringArray::from_iter_values(
                added.iter().map(|(entry, _)| entry.hash.as_str()),
            )),
            Arc::new(StringArray::from_iter_values(
                // The heading with the text: what the full-text index matches a query against.
                added.iter().map(|(entry, _)| entry.indexed()),
            )),
            Arc::new(vectors),
            repeat(model),
            Arc::new(UInt32Array::from_iter_values(
                added.iter().map(|(entry, _)| entry.position as u32),
            )),
        ],
    )
    .map_err(|err| lancedb::Error::Arrow { source: err })
}

fn scope_filter(scope: &str) -> String {
    format!("scope = {}", sql_string(scope))
}

/// The rows of any of `scopes` (none when it is empty).
fn scopes_filter(scopes: &[String]) -> String {
    match scopes {
        [] => "false".to_owned(),
        [scope] => scope_filter(scope),
        _ => {
            let scopes: Vec<String> = scopes.iter().map(|scope| sql_string(scope)).collect();
            format!("scope IN ({})", scopes.join(", "))
        }
    }
}

/// `value` as an SQL string literal. Scopes and hashes never hold a quote (they are built from
/// validated ids and hex), but a model id is whatever `Embedder::with_id` was given.
fn sql_string(value: &str) -> String {
    format!("'{}'", value.replace('\'', "''"))
}

fn strings<'a>(batch: &'a RecordBatch, column: &str) -> &'a StringArray {
    batch
        .column_by_name(column)
        .and_then(|c| c.as_any().downcast_ref::<StringArray>())
        .expect("the table's schema has this string column")
}

fn hits(batch: &RecordBatch) -> Vec<Hit> {
    let (scopes, hashes) = (strings(batch, "scope"), strings(batch, "hash"));
    (0..batch.num_rows())
        .map(|i| (scopes.value(i).to_owned(), hashes.value(i).to_owned()))
        .collect()
}
