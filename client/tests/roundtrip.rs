//! Values through a real server, in binary (parameters and results) and in text
//! (`simple_query`). Runs only when PG_LABELS_CLIENT_DB names a database where
//! `CREATE EXTENSION pg_labels` was run (tests/client/run.sh makes one); the server is the one
//! PGHOST, PGPORT and PGUSER point at. Otherwise each test passes with a note.

use pg_labels_types::{Error, LabelSet, Scope};
use std::io::Write;
use tokio_postgres::error::SqlState;
use tokio_postgres::{Client, Config, NoTls, SimpleQueryMessage};

async fn connect() -> Option<Client> {
    let Some(db) = std::env::var("PG_LABELS_CLIENT_DB")
        .ok()
        .filter(|d| !d.is_empty())
    else {
        // Straight to the handle: libtest captures print!/eprint! of passing tests, and the
        // note is there to be seen.
        let _ = writeln!(
            std::io::stderr(),
            "note: PG_LABELS_CLIENT_DB is not set; skipping the server round trip"
        );
        return None;
    };
    let var = |name| std::env::var(name).ok().filter(|v| !v.is_empty());
    let mut config = Config::new();
    config
        .host(var("PGHOST").as_deref().unwrap_or("/var/run/postgresql"))
        .port(var("PGPORT").map_or(5432, |p| p.parse().expect("PGPORT is a port number")))
        .user(var("PGUSER").as_deref().unwrap_or("postgres"))
        .dbname(&db);
    if let Some(password) = var("PGPASSWORD") {
        config.password(password);
    }
    let (client, connection) = config.connect(NoTls).await.expect("connect");
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Some(client)
}

fn scope(t: &str) -> Scope {
    t.parse().unwrap()
}

fn labels(t: &str) -> LabelSet {
    t.parse().unwrap()
}

/// The first row's columns of a simple (text protocol) query.
async fn simple_row(
    client: &Client,
    sql: &str,
) -> Result<Vec<Option<String>>, tokio_postgres::Error> {
    let messages = client.simple_query(sql).await?;
    let row = messages
        .iter()
        .find_map(|m| match m {
            SimpleQueryMessage::Row(r) => Some(r),
            _ => None,
        })
        .expect("a row");
    Ok((0..row.len())
        .map(|i| row.get(i).map(str::to_owned))
        .collect())
}

#[tokio::test]
async fn binary() {
    let Some(client) = connect().await else {
        return;
    };
    for s in ["*", "acme", "acme/platform", "acme/platform/infra-2"] {
        let s = scope(s);
        let row = client
            .query_one("SELECT $1::scope, $1::scope::text", &[&s])
            .await
            .unwrap();
        assert_eq!(row.get::<_, Scope>(0), s);
        assert_eq!(row.get::<_, String>(1), s.to_string());
        // A text-typed parameter gets the plain text form, which the server parses.
        let back: Scope = client
            .query_one("SELECT $1::text::scope", &[&s])
            .await
            .unwrap()
            .get(0);
        assert_eq!(back, s);
    }
    for l in [
        "{}",
        "{installation}",
        "{area:acme/platform,company:acme,origin:slack/T1/C2,tag:pii}",
    ] {
        let l = labels(l);
        let row = client
            .query_one(
                "SELECT $1::labelset, $1::labelset::text, labelset_count($1)",
                &[&l],
            )
            .await
            .unwrap();
        assert_eq!(row.get::<_, LabelSet>(0), l);
        assert_eq!(row.get::<_, String>(1), l.to_string());
        assert_eq!(row.get::<_, i32>(2) as usize, l.len());
    }

    // The server canonicalises; what comes back is the canonical value.
    let row = client
        .query_one(
            "SELECT '{tag:b,tag:a,tag:a}'::labelset, 'acme/platform'::scope, NULL::scope",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(row.get::<_, LabelSet>(0).to_string(), "{tag:a,tag:b}");
    assert_eq!(row.get::<_, Scope>(1), scope("acme/platform"));
    assert_eq!(row.get::<_, Option<Scope>>(2), None);
    let l: LabelSet = client
        .query_one("SELECT $1::text::labelset", &[&"{ tag:b, tag:a ,tag:a }"])
        .await
        .unwrap()
        .get(0);
    assert_eq!(l.to_string(), "{tag:a,tag:b}");

    // The server's operators and this crate's methods agree.
    let (run, data) = (
        scope("acme/platform"),
        labels("{area:acme/platform/infra,origin:tool}"),
    );
    let other = labels("{company:acme,origin:tool}");
    let row = client
        .query_one(
            "SELECT $1::scope @> $2::labelset, $2 @> $3::labelset, $2 || $3, 'acme'::scope @> $1",
            &[&run, &data, &other],
        )
        .await
        .unwrap();
    assert_eq!(row.get::<_, bool>(0), run.carries(&data));
    assert_eq!(row.get::<_, bool>(1), data.contains(&other));
    assert_eq!(row.get::<_, LabelSet>(2), data.union(&other));
    assert_eq!(row.get::<_, bool>(3), scope("acme").reaches(&run));
}

#[tokio::test]
async fn text() {
    let Some(client) = connect().await else {
        return;
    };
    let row = simple_row(
        &client,
        "SELECT '{tag:b,tag:a,tag:a}'::labelset, 'acme/platform'::scope, '*'::scope",
    )
    .await
    .unwrap();
    assert_eq!(row[0].as_deref(), Some("{tag:a,tag:b}"));
    assert_eq!(
        row[0].as_deref().unwrap().parse::<LabelSet>().unwrap(),
        labels("{tag:a,tag:b}")
    );
    assert_eq!(
        row[1].as_deref().unwrap().parse::<Scope>().unwrap(),
        scope("acme/platform")
    );
    assert_eq!(
        row[2].as_deref().unwrap().parse::<Scope>().unwrap(),
        Scope::installation()
    );

    // What Display writes, the server reads and prints back unchanged (canonical on both sides).
    let l = LabelSet::from_labels([
        "tag:pii",
        "origin:webhook/api.github.com",
        "area:acme/a-b",
        "area:acme/a",
    ])
    .unwrap();
    let s = scope("acme/a-b/c_d");
    let row = simple_row(&client, &format!("SELECT '{l}'::labelset, '{s}'::scope"))
        .await
        .unwrap();
    assert_eq!(row[0], Some(l.to_string()));
    assert_eq!(row[1], Some(s.to_string()));
}

#[tokio::test]
async fn malformed_text_is_refused() {
    let Some(client) = connect().await else {
        return;
    };
    for (sql, bad) in [
        (
            "SELECT '{tag:a,}'::labelset",
            "{tag:a,}".parse::<LabelSet>().map(drop),
        ),
        (
            "SELECT '{secret:x}'::labelset",
            "{secret:x}".parse::<LabelSet>().map(drop),
        ),
        ("SELECT 'acme/'::scope", "acme/".parse::<Scope>().map(drop)),
    ] {
        let err = simple_row(&client, sql).await.unwrap_err();
        assert_eq!(
            err.code(),
            Some(&SqlState::INVALID_TEXT_REPRESENTATION),
            "{sql}"
        );
        // Both sides run the same parser: the server's DETAIL is this crate's reason.
        let Err(Error::Invalid { source, .. }) = bad else {
            panic!("{sql} parsed here")
        };
        assert_eq!(
            err.as_db_error().unwrap().detail(),
            Some(source.to_string().as_str())
        );
    }
}
