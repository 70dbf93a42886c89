//! PostgreSQL over TLS, as the README's URL connects (no `sslmode`: sqlx's `prefer` takes TLS
//! where the server offers it), beside the same server with `sslmode=disable`: cycles of a
//! prefetch and one add on a MEMORY.md grown from empty, the two connections' cycles
//! interleaved so that whatever else loads the machine loads both alike. A write over TLS once
//! cost 43 ms more than without (sqlx 0.9.0 left Nagle's algorithm on): this is where that
//! shows.

use std::time::{Duration, Instant};

use memory_core::{IfMatch, MemoryProvider, MemoryUpdate, Store};
use memory_postgres::{PostgresConfig, PostgresProvider};

use crate::backends::{self, Backend, BoxError};
use crate::stats::Samples;
use crate::workloads::{ctx, entry};

/// One way of connecting, measured.
pub struct Connection {
    /// What it is, for the table.
    pub name: &'static str,
    /// Whether the connection was TLS, as the server saw it (`pg_stat_ssl`).
    pub tls: bool,
    /// Each cycle's prefetch.
    pub prefetch: Samples,
    /// Each cycle's one-add sync.
    pub add: Samples,
    /// Prefetch + add cycles per second.
    pub cycles_per_second: f64,
}

/// `url` with its `sslmode` parameter set to `mode`, or removed (`None`: sqlx's default,
/// `prefer`).
pub fn with_sslmode(url: &str, mode: Option<&str>) -> String {
    let (base, query) = url.split_once('?').unwrap_or((url, ""));
    let mut params: Vec<String> = query
        .split('&')
        .filter(|param| !param.is_empty() && !param.starts_with("sslmode="))
        .map(str::to_owned)
        .collect();
    if let Some(mode) = mode {
        params.push(format!("sslmode={mode}"));
    }
    match params.is_empty() {
        true => base.to_owned(),
        false => format!("{base}?{}", params.join("&")),
    }
}

/// Measures `cycles` prefetch + add cycles over `url` (without `sslmode=disable` if it says so:
/// TLS where the server offers it) and over `url` with `sslmode=disable`, in a schema of `run_id`'s that it drops again.
pub async fn measure(url: &str, run_id: &str, cycles: usize) -> Result<[Connection; 2], BoxError> {
    let schema = format!("{}_tls", run_id.replace('-', "_"));
    // The URL as given, unless it turns TLS off: the README's names no `sslmode`.
    let over_tls = match url.contains("sslmode=disable") {
        true => with_sslmode(url, None),
        false => url.to_owned(),
    };
    let urls = [
        ("as configured (no sslmode: TLS where offered)", over_tls),
        ("sslmode=disable", with_sslmode(url, Some("disable"))),
    ];
    let measured = measure_in(&urls, &schema, cycles).await;
    let backend = Backend::Postgres {
        url: urls[1].1.clone(),
        schema,
    };
    if let Err(err) = backends::clean_up(&backend).await {
        eprintln!("!!! could not clean up after the TLS comparison: {err}");
    }
    measured
}

async fn measure_in(
    urls: &[(&'static str, String); 2],
    schema: &str,
    cycles: usize,
) -> Result<[Connection; 2], BoxError> {
    let mut providers = Vec::new();
    for (_, url) in urls {
        providers
            .push(PostgresProvider::connect(&PostgresConfig::new(url).with_schema(schema)).await?);
    }
    let mut tls = [false; 2];
    for (at, provider) in providers.iter().enumerate() {
        let ssl: Option<bool> =
            sqlx::query_scalar("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()")
                .fetch_one(provider.store().pool())
                .await?;
        tls[at] = ssl == Some(true);
    }
    let contexts = [ctx("tls-on"), ctx("tls-off")];
    let mut prefetch = [Samples::default(), Samples::default()];
    let mut add = [Samples::default(), Samples::default()];
    let mut busy = [Duration::ZERO; 2];
    for i in 0..cycles {
        // Which goes first alternates, so neither always follows the other's write.
        for turn in 0..2 {
            let at = (i + turn) % 2;
            let (provider, ctx) = (&providers[at], &contexts[at]);
            let cycle = Instant::now();
            prefetch[at].time(provider.prefetch(ctx)).await?;
            let one = [MemoryUpdate::add(Store::Memory, entry(i))];
            add[at]
                .time(provider.sync(ctx, &one, &IfMatch::NONE))
                .await?;
            busy[at] += cycle.elapsed();
        }
    }
    let [prefetch_tls, prefetch_plain] = prefetch;
    let [add_tls, add_plain] = add;
    let rate = |busy: Duration| cycles as f64 / busy.as_secs_f64();
    Ok([
        Connection {
            name: urls[0].0,
            tls: tls[0],
            prefetch: prefetch_tls,
            add: add_tls,
            cycles_per_second: rate(busy[0]),
        },
        Connection {
            name: urls[1].0,
            tls: tls[1],
            prefetch: prefetch_plain,
            add: add_plain,
            cycles_per_second: rate(busy[1]),
        },
    ])
}

/// What a one-add sync over TLS costs beyond one without, at the p50, in milliseconds.
pub fn added_p50(connections: &[Connection; 2]) -> f64 {
    connections[0].add.quantile_ms(0.5) - connections[1].add.quantile_ms(0.5)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sslmode_is_set_or_removed_and_other_parameters_kept() {
        let url = "postgres://u@h:5432/db";
        assert_eq!(with_sslmode(url, None), url);
        assert_eq!(
            with_sslmode(url, Some("disable")),
            "postgres://u@h:5432/db?sslmode=disable"
        );
        let with = "postgres://u@h/db?application_name=x&sslmode=disable";
        assert_eq!(
            with_sslmode(with, None),
            "postgres://u@h/db?application_name=x"
        );
        assert_eq!(
            with_sslmode(with, Some("disable")),
            "postgres://u@h/db?application_name=x&sslmode=disable"
        );
        assert_eq!(
            with_sslmode("postgres://u@h/db?sslmode=require", None),
            "postgres://u@h/db"
        );
    }
}
