//! What the report's header says of the run beyond its figures: the machine, the toolchain,
//! the services' versions, and the command that started it.

use crate::args::Args;

/// How this run was started, for the report to be reproduced: the script and the flags given.
pub fn command_line() -> String {
    std::iter::once("./scripts/bench".to_owned())
        .chain(std::env::args().skip(1))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The machine, toolchain and service versions, for the report's header.
pub async fn machine(args: &Args) -> String {
    let read = |path: &str| std::fs::read_to_string(path).unwrap_or_default();
    let cpuinfo = read("/proc/cpuinfo");
    let cpu = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .map(|l| l.trim_start_matches([' ', '\t', ':']).to_owned())
        .unwrap_or_else(|| "unknown CPU".to_owned());
    let cores = std::thread::available_parallelism().map_or(0, usize::from);
    let memory_kib: u64 = read("/proc/meminfo")
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|l| l.trim().trim_end_matches(" kB").parse().ok())
        .unwrap_or(0);
    let run = |program: &str, arguments: &[&str]| {
        std::process::Command::new(program)
            .args(arguments)
            .output()
            .ok()
            .filter(|out| out.status.success())
            .map(|out| String::from_utf8_lossy(&out.stdout).trim().to_owned())
            .unwrap_or_else(|| "unknown".to_owned())
    };
    let postgres = postgres_version(&args.postgres_url).await;
    let redis = redis_version(&args.redis_url).await;
    let date = run("date", &["-u", "+%Y-%m-%d %H:%M UTC"]);
    format!(
        "Machine: {cpu}, {cores} cores, {:.0} GiB RAM, {} ({}); {}; commit {}; run {date}. \
         Services: {postgres}; Redis {redis}; both on 127.0.0.1. Markdown and the vector \
         index in a temp directory on the local disk.\n",
        memory_kib as f64 / 1024.0 / 1024.0,
        run("uname", &["-sr"]),
        run("uname", &["-m"]),
        run("rustc", &["--version"]),
        run("git", &["rev-parse", "--short", "HEAD"]),
    )
}

async fn postgres_version(url: &str) -> String {
    use sqlx::Connection;
    let Ok(mut db) = sqlx::PgConnection::connect(url).await else {
        return "PostgreSQL (unreachable)".to_owned();
    };
    sqlx::query_scalar::<_, String>("SHOW server_version")
        .fetch_one(&mut db)
        .await
        .map(|v| format!("PostgreSQL {v}"))
        .unwrap_or_else(|_| "PostgreSQL (version unknown)".to_owned())
}

async fn redis_version(url: &str) -> String {
    let info: Option<String> = async {
        let client = redis::Client::open(url).ok()?;
        let mut conn = client.get_multiplexed_async_connection().await.ok()?;
        redis::cmd("INFO")
            .arg("server")
            .query_async(&mut conn)
            .await
            .ok()
    }
    .await;
    info.and_then(|info| {
        info.lines()
            .find_map(|l| l.strip_prefix("redis_version:"))
            .map(str::to_owned)
    })
    .unwrap_or_else(|| "(version unknown)".to_owned())
}
