//! The recorder: one background worker per database that writes the queue's records to
//! `pg_labels.refused_writes` as the tables' owner, a batch per transaction.

use super::*;

/// Writes records (the worker's transaction is open).
pub(super) fn write(spi: &crate::pg::spi::Spi, namespace: &str, records: &[Value]) -> Result<u64> {
    let array = crate::pg::datum::text_datum(&Value::Array(records.to_vec()).to_string())?;
    let sql = Sql::new(
        "INSERT INTO pg_labels.refused_writes
             (refused_at, last_at, count, kind, run_id, run_scope, carried_scope, tool, rule, sqlstate,
              labels, reason, detail, actor, session_actor, xid, backend_pid, attempted)
         SELECT r.at::timestamptz, r.last::timestamptz, r.count, r.kind, r.run, r.run_scope::",
    )
    .ident(namespace)
    .push(".scope, r.scope::")
    .ident(namespace)
    .push(".scope, r.tool, r.rule, r.sqlstate, r.labels::")
    .ident(namespace)
    .push(
        ".labelset, r.reason, r.detail, r.actor, r.session_actor, r.xid::xid8, r.pid, r.attempted
           FROM pg_catalog.jsonb_to_recordset($1::pg_catalog.jsonb)
             AS r (at text, last text, count bigint, kind text, run uuid, run_scope text, scope text,
                   tool text, rule text, sqlstate text, labels text, reason text, detail text,
                   actor text, session_actor text, xid text, pid int, attempted jsonb)",
    );
    Ok(run_with(
        spi,
        &sql,
        &[crate::pg::sys::types::TEXTOID],
        &[Some(array)],
        false,
    )?
    .len())
}

/// The extension's own schema (the types' names are qualified with it), and the tables' owner.
pub(super) static EXTENSION_SCHEMA: SavedPlan = SavedPlan::new(
    c"SELECT n.nspname::text, c.relowner
        FROM pg_catalog.pg_extension e
        JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace
        JOIN pg_catalog.pg_class c ON c.oid = 'pg_labels.refused_writes'::pg_catalog.regclass
       WHERE e.extname = 'pg_labels'",
);

crate::bgworker_main! {
    /// The refusal recorder (see [`recorder_main`]).
    fn pgl_refusal_worker = recorder_main
}

/// The background worker that records refusals: attaches to its database's queue (as its one
/// worker), connects to the database (as the bootstrap superuser, so that an owner that cannot
/// log in, or a database closed to connections, does not stop it) and writes what it finds as
/// the tables' owner, a batch per transaction, until the queue stays empty for half a second.
/// A batch that fails is written again one record at a time; a record that still fails is
/// named in a `WARNING` and counted for its backend (whose `refusals_recorded()` says false).
///
pub(super) fn recorder_main(segment: u32) {
    let Some(queue) = channel::Consumer::attach(segment) else {
        return;
    };
    crate::pg::bgworker::connect(queue.database());
    let found = crate::pg::bgworker::in_transaction(Oid::INVALID, || {
        with_spi(|spi| {
            let rows = EXTENSION_SCHEMA.execute(spi, &[], &[], true, 1)?;
            Ok((rows.get::<String>(0, 1)?, rows.get::<Oid>(0, 2)?))
        })
    });
    let (namespace, role) = match found {
        Ok((Some(ns), Some(role))) => (ns, role),
        Ok(_) => {
            warning(
                "pg_labels: the refusal recorder cannot start: the extension is not installed here",
            );
            return;
        }
        Err(e) => {
            warning(&format!(
                "pg_labels: the refusal recorder cannot start: {}",
                e.data().message
            ));
            return;
        }
    };
    let store = |records: &[(Value, &channel::Message)]| {
        let values: Vec<Value> = records.iter().map(|(v, _)| v.clone()).collect();
        let all = crate::pg::bgworker::in_transaction(role, || {
            with_spi(|spi| write(spi, &namespace, &values))
        });
        if all.is_ok() {
            return;
        }
        // one at a time, to lose none but what cannot be written
        for (v, m) in records {
            let one = std::slice::from_ref(v);
            let out = crate::pg::bgworker::in_transaction(role, || {
                with_spi(|spi| write(spi, &namespace, one))
            });
            if let Err(e) = out {
                channel::warn_lost(m, &e.data().message);
                queue.lost(m);
            }
        }
    };
    let mut idle = 0;
    loop {
        let batch = queue.peek(256);
        let mut busy = false;
        if !batch.messages.is_empty() {
            let records = readable(&queue, &batch.messages);
            store(&records);
            queue.done(&batch);
            busy = true;
        }
        let second = crate::pg::backend::now().div_euclid(1_000_000);
        let due = queue.due(second);
        if !due.is_empty() {
            let (taken, messages): (Vec<usize>, Vec<channel::Message>) = due.into_iter().unzip();
            let records = readable(&queue, &messages);
            store(&records);
            for i in taken {
                queue.release(i);
            }
            busy = true;
        }
        if busy {
            idle = 0;
            continue;
        }
        if crate::pg::bgworker::sigterm_received() {
            return;
        }
        if !crate::pg::bgworker::wait_latch(std::time::Duration::from_millis(100)) {
            return;
        }
        idle += 1;
        if idle >= 5 {
            if queue.leave() {
                return;
            }
            idle = 0;
        }
    }
}

/// The worker's messages as records to write (a message that is not a record, which no
/// backend sends, is said in the server log too).
pub(super) fn readable<'a>(
    queue: &channel::Consumer,
    messages: &'a [channel::Message],
) -> Vec<(Value, &'a channel::Message)> {
    let mut out = Vec::new();
    for m in messages {
        match serde_json::from_slice::<Value>(&m.bytes) {
            Ok(mut v) => {
                // a counter's count and last time put in, and its LOG line written (no one
                // wrote one for a counter)
                if m.count > 0 {
                    v["count"] = json!(m.count);
                    v["last"] = json!(pg_labels_core::retention::utc_text_micros(m.last));
                    log_record(&v, m.count as i64);
                }
                out.push((v, m))
            }
            Err(_) => {
                channel::warn_lost(m, "not a record");
                queue.lost(m);
            }
        }
    }
    out
}
