//! The barrier's decision on opening a run: the listener and agent version it is opened for,
//! the scope it is sealed in and the labels it starts with, or the refusal.

use super::Answer;
use crate::label;
use crate::labelset::{self, LabelSet};
use crate::refusal::{self, Refusal};

/// The listener a run is opened for, as found in the catalog.
#[derive(Clone, Copy, Debug)]
pub struct ListenerFacts<'a> {
    pub id: i64,
    pub scope: &'a [u8],
    pub agent: Option<&'a str>,
}

/// The agent version a run is opened for: its number and, when it is published, its scope.
#[derive(Clone, Copy, Debug)]
pub struct VersionFacts<'a> {
    pub version: i32,
    pub scope: Option<&'a [u8]>,
}

/// What a run is opened with.
#[derive(Clone, Copy, Debug)]
pub struct Opening<'a> {
    /// The run's id, for messages.
    pub run: &'a str,
    /// The scope the writer gave, if any.
    pub scope: Option<&'a [u8]>,
    /// The initial labels the writer gave.
    pub labels: LabelSet<'a>,
    /// The agent the writer gave, if any.
    pub agent: Option<&'a str>,
    pub listener: Option<ListenerFacts<'a>>,
    pub version: Option<VersionFacts<'a>>,
}

/// What the opened run is: its scope and labels, and what the database fills in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Opened {
    pub scope: Vec<u8>,
    /// The scope was not given and comes from the listener or the version.
    pub scope_filled: bool,
    /// The agent was not given and comes from the listener.
    pub agent_filled: Option<String>,
    /// The initial labels with the run's own scope label.
    pub labels: Vec<u8>,
}

/// Open a run, or say why it is not even opened. A run opened through a listener has exactly
/// the listener's scope and agent; a run of a published version has the version's scope; its
/// initial labels must fit its scope; and it is opened in a company or area, never in `*`.
pub fn open_run(o: &Opening<'_>) -> Answer<Opened> {
    let mut scope_filled = false;
    let mut agent_filled = None;
    let mut agent = o.agent;
    let mut path: Option<&[u8]> = o.scope;
    if let Some(l) = o.listener {
        // The event binding decides where the run is: the listener's scope, nothing wider (it
        // could carry more) and nothing else.
        match path {
            Some(p) if p != l.scope => {
                return Err(refusal::run_not_opened(
                    o.run,
                    p,
                    &[],
                    Some((l.id, l.scope)),
                ))
            }
            Some(_) => {}
            None => {
                path = Some(l.scope);
                scope_filled = true;
            }
        }
        match (agent, l.agent) {
            (Some(a), Some(b)) if a != b => {
                return Err(refusal::listener_agent(o.run, l.id, b, a));
            }
            (None, Some(b)) => {
                agent = Some(b);
                agent_filled = Some(b.to_string());
            }
            _ => {}
        }
    }
    if let Some(v) = o.version {
        // A run of a published version has the version's scope ("the agent was published in
        // the right company and area").
        let Some(a) = agent else {
            return Err(refusal::no_version(o.run, None, v.version));
        };
        let Some(vs) = v.scope else {
            return Err(refusal::no_version(o.run, Some(a), v.version));
        };
        match path {
            Some(p) if p != vs => {
                return Err(refusal::run_not_published(o.run, p, a, v.version, vs));
            }
            Some(_) => {}
            None => {
                path = Some(vs);
                scope_filled = true;
            }
        }
    }
    let Some(path) = path else {
        return Err(Refusal {
            sqlstate: crate::sqlstate::NOT_NULL_VIOLATION,
            message:
                "null value in column \"scope\" of relation \"runs\" violates not-null constraint"
                    .into(),
            detail: None,
            hint: None,
            constraint: None,
            table: Some("runs"),
            labels: None,
        });
    };
    if path.is_empty() {
        return Err(refusal::run_in_installation(o.run));
    }
    let own = labelset::from_entries(vec![label::of_scope(path)]);
    let initial = o.labels.union(LabelSet::from_canonical(&own));
    let escaping = LabelSet::from_canonical(&initial).escaping(path);
    if !escaping.is_empty() {
        return Err(refusal::run_not_opened(o.run, path, &escaping, None));
    }
    Ok(Opened {
        scope: path.to_vec(),
        scope_filled,
        agent_filled,
        labels: initial,
    })
}
