//! The kinds of step in the trail and the columns each may carry.
//!
//! Every kind has a fixed shape: which columns the writer may fill, which it must fill, and
//! which only the database writes (the decision of a judged call, the approval it used, the
//! share and crossings a read used, the step's id, time and actor). [`check`] compares a written
//! row with its kind's shape; anything else is refused, naming the column.

/// A step's kind (`steps.kind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Data entering the run from outside or from the platform.
    Input,
    /// A planning call of the model, with the labels of what it was sent.
    Planned,
    /// A proposed tool call judged by the gate (recorded, never raised).
    GateDecided,
    /// A request for a person's approval of one concrete call.
    ApprovalRequested,
    /// A person's decision on a request (written only by `decide_approval()`).
    ApprovalDecided,
    /// A tool call (judged; refused calls raise and leave no row).
    ToolCalled,
    /// A tool's result.
    ToolResult,
    /// A shared artifact read into the run.
    ContextRead,
}

impl Kind {
    pub const ALL: [Kind; 8] = [
        Kind::Input,
        Kind::Planned,
        Kind::GateDecided,
        Kind::ApprovalRequested,
        Kind::ApprovalDecided,
        Kind::ToolCalled,
        Kind::ToolResult,
        Kind::ContextRead,
    ];

    pub fn parse(s: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == s)
    }

    pub fn name(self) -> &'static str {
        match self {
            Kind::Input => "input",
            Kind::Planned => "planned",
            Kind::GateDecided => "gate_decided",
            Kind::ApprovalRequested => "approval_requested",
            Kind::ApprovalDecided => "approval_decided",
            Kind::ToolCalled => "tool_called",
            Kind::ToolResult => "tool_result",
            Kind::ContextRead => "context_read",
        }
    }

    /// Judged by the rules of a tool call (`tool_called` refuses, `gate_decided` records).
    pub fn is_judged(self) -> bool {
        matches!(self, Kind::ToolCalled | Kind::GateDecided)
    }

    /// Reads the tool catalog (the rules, or the trust of a result).
    pub fn reads_tool(self) -> bool {
        matches!(
            self,
            Kind::ToolCalled | Kind::GateDecided | Kind::ToolResult
        )
    }
}

/// What a step's `decision` may hold: a judged call's ([`crate::rules::Decision`]) or a
/// person's on an approval request (`approval_decided`).
pub const DECISIONS: [&str; 5] = ["allow", "ask", "block", "granted", "denied"];

/// Is `s` a decision a step may hold ([`DECISIONS`])?
pub fn is_decision(s: &str) -> bool {
    DECISIONS.contains(&s)
}

/// The columns of a step whose writer is constrained.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Column {
    Tool,
    Args,
    Reason,
    Decision,
    Rule,
    RequestId,
    OriginRun,
    ArtifactId,
    Digest,
    ShareId,
    CrossingIds,
    /// When an approval request expires (release 0.3.1).
    ExpiresAt,
}

impl Column {
    pub const ALL: [Column; 12] = [
        Column::Tool,
        Column::Args,
        Column::Decision,
        Column::Rule,
        Column::Reason,
        Column::RequestId,
        Column::OriginRun,
        Column::ArtifactId,
        Column::Digest,
        Column::ShareId,
        Column::CrossingIds,
        Column::ExpiresAt,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Column::Tool => "tool",
            Column::Args => "args",
            Column::Reason => "reason",
            Column::Decision => "decision",
            Column::Rule => "rule",
            Column::RequestId => "request_id",
            Column::OriginRun => "origin_run",
            Column::ArtifactId => "artifact_id",
            Column::Digest => "digest",
            Column::ShareId => "share_id",
            Column::CrossingIds => "crossing_ids",
            Column::ExpiresAt => "expires_at",
        }
    }
}

/// Who fills a column of a step of some kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fill {
    /// The writer may fill it or leave it NULL.
    Writer,
    /// The writer must fill it.
    Required,
    /// The writer may fill it, and the database checks it against what it derives (and fills
    /// it when left NULL): a context read's origin run and digest.
    Checked,
    /// Only the database writes it; a value from the writer is refused.
    Database,
    /// No step of this kind carries it.
    Never,
}

/// The shape of a kind: who fills each constrained column.
pub fn fill(kind: Kind, column: Column) -> Fill {
    use Column as C;
    use Fill::*;
    use Kind as K;
    match (kind, column) {
        // what the call is about
        (K::Input | K::Planned, C::Tool | C::Args | C::Reason) => Writer,
        (K::GateDecided | K::ToolCalled, C::Tool | C::Args) => Writer,
        (K::ApprovalRequested, C::Tool) => Required,
        (K::ApprovalRequested, C::Args | C::Reason | C::ExpiresAt) => Writer,
        (K::ToolResult, C::Tool) => Required,
        (K::ToolResult, C::Args | C::Reason) => Writer,
        (K::ContextRead, C::ArtifactId) => Required,
        (K::ContextRead, C::OriginRun | C::Digest) => Checked,
        (K::ContextRead, C::Reason) => Writer,
        // what the database decides
        (K::GateDecided | K::ToolCalled, C::Decision | C::Rule | C::Reason | C::CrossingIds) => {
            Database
        }
        (K::ToolCalled, C::RequestId) => Database,
        (K::ContextRead, C::ShareId | C::CrossingIds) => Database,
        // a decision: written by decide_approval() alone, from the request it decides
        (K::ApprovalDecided, C::Tool | C::Args | C::Decision | C::Reason | C::RequestId) => {
            Database
        }
        _ => Never,
    }
}

/// A column the writer filled that the step's kind does not allow, or one it left out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShapeError {
    pub kind: Kind,
    pub column: Column,
    pub fill: Fill,
    /// true: the writer gave a value; false: it left a required column NULL.
    pub given: bool,
}

impl std::fmt::Display for ShapeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (k, c) = (self.kind.name(), self.column.name());
        let a = if k.starts_with(['a', 'e', 'i', 'o', 'u']) {
            "an"
        } else {
            "a"
        };
        match (self.fill, self.given) {
            (Fill::Required, false) => write!(f, "{a} {k} step needs {c}"),
            (Fill::Database, _) => write!(f, "{c} of {a} {k} step is written by the database"),
            _ => write!(f, "{a} {k} step does not carry {c}"),
        }
    }
}

/// Check the columns a writer filled (`given(column)`: not NULL) against the kind's shape.
/// Returns the first violation in column order.
pub fn check(kind: Kind, given: impl Fn(Column) -> bool) -> Result<(), ShapeError> {
    for column in Column::ALL {
        let fill = fill(kind, column);
        let g = given(column);
        let bad = match fill {
            Fill::Writer | Fill::Checked => false,
            Fill::Required => !g,
            Fill::Database | Fill::Never => g,
        };
        if bad {
            return Err(ShapeError {
                kind,
                column,
                fill,
                given: g,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;

/// Months in the trail's ring of partitions (`steps.slot`).
pub const RING_MONTHS: i64 = 24;

/// The ring slot of a step made at `micros` (PostgreSQL's microseconds since
/// 2000-01-01 00:00 UTC): its month (UTC) modulo [`RING_MONTHS`], as
/// `pg_labels.trail_slot()` computes it.
pub fn trail_slot(micros: i64) -> i16 {
    let (y, m) = year_month(micros);
    ((y * 12 + m - 1).rem_euclid(RING_MONTHS)) as i16
}

/// The UTC year and month (1-12) of a PostgreSQL timestamp.
pub fn year_month(micros: i64) -> (i64, i64) {
    const DAY: i64 = 86_400_000_000;
    // days since 1970-01-01 (2000-01-01 is day 10957), then H. Hinnant's civil_from_days
    let z = micros.div_euclid(DAY) + 10_957 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + if m <= 2 { 1 } else { 0 };
    (y, m)
}

#[cfg(test)]
mod ring_tests;
