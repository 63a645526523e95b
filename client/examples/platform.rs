//! A platform service's view of pg_labels: open a run, feed it untrusted input, and watch the
//! database refuse an irreversible tool call on it.
//!
//! Connects like psql, from PGHOST (a host or a socket directory), PGPORT, PGUSER, PGDATABASE
//! (and PGPASSWORD), to a database where `CREATE EXTENSION pg_labels` was run:
//!
//! ```sh
//! PGHOST=/var/run/postgresql PGDATABASE=app cargo run -p pg_labels_types --example platform
//! ```
//!
//! Exits 0 only when the refund was refused with SQLSTATE 23L02 and a DETAIL.

use pg_labels_types::{sqlstate, LabelSet, Scope};
use std::env;
use std::error::Error;
use std::process::ExitCode;
use tokio_postgres::{Config, NoTls};
use uuid::Uuid;

/// A `tokio_postgres::Config` from libpq's environment variables (tokio-postgres reads none).
fn config_from_env() -> Result<Config, Box<dyn Error>> {
    let var = |name| env::var(name).ok().filter(|v| !v.is_empty());
    let user = var("PGUSER")
        .or_else(|| var("USER"))
        .unwrap_or_else(|| "postgres".into());
    let mut config = Config::new();
    // A host starting with "/" is a socket directory, as for libpq; without PGHOST, use
    // Debian's libpq default rather than TCP to localhost.
    let hosts = var("PGHOST").unwrap_or_else(|| "/var/run/postgresql".into());
    for host in hosts.split(',') {
        config.host(host);
    }
    config
        .port(var("PGPORT").map_or(Ok(5432), |p| p.parse())?)
        .dbname(var("PGDATABASE").as_deref().unwrap_or(&user))
        .user(&user)
        .application_name("pg_labels_types example");
    if let Some(password) = var("PGPASSWORD") {
        config.password(password);
    }
    Ok(config)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    match run().await {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The scenario; `Ok(false)` when the database did not refuse as it should have.
async fn run() -> Result<bool, Box<dyn Error>> {
    let (client, connection) = config_from_env()?.connect(NoTls).await?;
    // The connection does the socket I/O and must be polled beside the client.
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            eprintln!("connection error: {e}");
        }
    });

    // ON CONFLICT: the catalog is global, so a second run of the example finds the tools there.
    client
        .execute(
            "INSERT INTO pg_labels.tools (name, effect) VALUES ('pay.refund', 'financial'), \
             ('tickets.read', 'read') ON CONFLICT (name) DO NOTHING",
            &[],
        )
        .await?;

    let scope: Scope = "acme/platform".parse()?;
    let row = client
        .query_one(
            "INSERT INTO pg_labels.runs (scope) VALUES ($1) RETURNING id, labels",
            &[&scope],
        )
        .await?;
    let run_id: Uuid = row.try_get("id")?;
    let labels: LabelSet = row.try_get("labels")?;
    println!("opened run {run_id} in scope {scope}; it carries {labels}");

    let slack: LabelSet = "{origin:slack/T1/C2}".parse()?;
    client
        .execute(
            "INSERT INTO pg_labels.steps (run_id, kind, labels) VALUES ($1, 'input', $2)",
            &[&run_id, &slack],
        )
        .await?;
    let labels: LabelSet = client
        .query_one(
            "SELECT labels FROM pg_labels.runs WHERE id = $1",
            &[&run_id],
        )
        .await?
        .try_get("labels")?;
    println!(
        "input from Slack {slack}: the run now carries {labels} (trusted: {})",
        labels.is_trusted()
    );

    println!("calling pay.refund (financial) on that run...");
    let err = match client
        .execute(
            "INSERT INTO pg_labels.steps (run_id, kind, tool) VALUES ($1, 'tool_called', 'pay.refund')",
            &[&run_id],
        )
        .await
    {
        Ok(_) => {
            println!("not refused: the database let a refund run on Slack input");
            return Ok(false);
        }
        Err(e) => e,
    };
    // Anything but a refusal from the server (a lost connection, ...) is an error here.
    let Some(db) = err.as_db_error() else {
        return Err(err.into());
    };
    let show = |v: Option<&str>| v.unwrap_or("(none)").to_owned();
    println!("refused:");
    println!("  code:       {}", db.code().code());
    println!("  constraint: {}", show(db.constraint()));
    println!("  message:    {}", db.message());
    println!("  detail:     {}", show(db.detail()));
    println!("  hint:       {}", show(db.hint()));
    let want = sqlstate::text(&sqlstate::UNTRUSTED_TO_IRREVERSIBLE);
    let expected = db.code().code() == want && db.detail().is_some_and(|d| !d.is_empty());
    if !expected {
        println!("expected SQLSTATE {want} with a detail");
    }
    Ok(expected)
}
