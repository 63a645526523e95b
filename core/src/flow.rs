//! The publication check: can data from an untrusted source reach an irreversible tool through
//! the steps an agent version declares?
//!
//! A declaration lists steps, each calling a tool on inputs; an input is a source
//! (`source:slack`, `source:webhook`, `source:event` are untrusted, `source:agent` — the
//! published instructions — is trusted) or the output of another step. A step's *inputs are
//! untrusted* when any input is an untrusted source or the untrusted output of a step; a step's
//! *output is untrusted* when its inputs are, or its tool's output is (`trusted_output = false`).
//! A `destructive` or `financial` step with untrusted inputs refuses the publication; a
//! `reversible_write` step with untrusted inputs needs a person's approval at run time.
//!
//! Everything is linear in steps + edges: ids are hashed once, cycles are found by Kahn's
//! topological sort, taint is propagated in topological order remembering, for every step, the
//! input that tainted it and where the taint began, so a path is rebuilt only for the steps
//! reported, and only its last [`MAX_HOPS`] hops.

use crate::rules::Effect;
use serde_json::Value;
use std::collections::HashMap;
use std::fmt;

/// The sources an input may name, with whether they are trusted.
pub const SOURCES: [(&str, bool); 4] = [
    ("source:slack", false),
    ("source:webhook", false),
    ("source:event", false),
    ("source:agent", true),
];

/// Most step hops kept in a reported path (longer paths elide their middle).
pub const MAX_HOPS: usize = 16;

/// One declared step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepDecl {
    pub id: String,
    pub tool: String,
    pub inputs: Vec<String>,
}

/// What the check needs of a tool's catalog entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ToolInfo {
    pub effect: Effect,
    pub trusted_output: bool,
}

/// A declaration that cannot be checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeclError {
    /// Not of the declared-steps format: where (`steps[3].inputs[1]`) and what.
    Malformed {
        at: String,
        problem: String,
    },
    DuplicateId {
        id: String,
        first: usize,
        again: usize,
    },
    UnknownSource {
        step: String,
        source: String,
    },
    UnknownInput {
        step: String,
        input: String,
    },
    UnknownTool {
        step: String,
        tool: String,
    },
    /// Step ids around a cycle, each an input of the next, the first repeated at the end.
    Cycle {
        steps: Vec<String>,
    },
}

impl fmt::Display for DeclError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeclError::Malformed { at, problem } => write!(f, "{at} {problem}"),
            DeclError::DuplicateId { id, first, again } => {
                write!(f, "steps[{again}] repeats id \"{id}\" of steps[{first}]")
            }
            DeclError::UnknownSource { step, source } => write!(
                f,
                "step \"{step}\" reads unknown source \"{source}\" (sources are source:slack, source:webhook, source:event and source:agent)"
            ),
            DeclError::UnknownInput { step, input } => {
                write!(f, "step \"{step}\" reads \"{input}\", which is no declared step")
            }
            DeclError::UnknownTool { step, tool } => {
                write!(f, "step \"{step}\" calls tool \"{tool}\", which the tool catalog does not list")
            }
            DeclError::Cycle { steps } => {
                write!(f, "the steps form a cycle: {}", steps.join(" → "))
            }
        }
    }
}

impl std::error::Error for DeclError {}

fn malformed(at: impl Into<String>, problem: impl Into<String>) -> DeclError {
    DeclError::Malformed {
        at: at.into(),
        problem: problem.into(),
    }
}

/// Read a declaration (`{"steps": [{"id": ..., "tool": ..., "inputs": [...]}, ...]}`) from its
/// JSON text. Other keys are allowed and ignored; `inputs` may be left out (no inputs), but
/// `"inputs": null` is refused: a null is not a list of inputs, and publication fails closed.
pub fn parse(json: &str) -> Result<Vec<StepDecl>, DeclError> {
    let v: Value = serde_json::from_str(json)
        .map_err(|e| malformed("the declaration", format!("is not JSON: {e}")))?;
    from_value(&v)
}

/// Read a declaration from a parsed JSON value.
pub fn from_value(v: &Value) -> Result<Vec<StepDecl>, DeclError> {
    let obj = v.as_object().ok_or_else(|| {
        malformed(
            "the declaration",
            "must be an object with a \"steps\" array",
        )
    })?;
    let steps = obj
        .get("steps")
        .ok_or_else(|| malformed("the declaration", "has no \"steps\""))?
        .as_array()
        .ok_or_else(|| malformed("steps", "must be an array"))?;
    let text = |s: &Value, at: &str, what: &str| -> Result<String, DeclError> {
        match s.get(what) {
            None => Err(malformed(at, format!("has no \"{what}\""))),
            Some(Value::String(t)) if t.trim().is_empty() => {
                Err(malformed(format!("{at}.{what}"), "must not be empty"))
            }
            Some(Value::String(t)) => Ok(t.clone()),
            Some(_) => Err(malformed(format!("{at}.{what}"), "must be a string")),
        }
    };
    steps
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let at = format!("steps[{i}]");
            if !s.is_object() {
                return Err(malformed(
                    &at,
                    "must be an object with \"id\", \"tool\" and \"inputs\"",
                ));
            }
            let id = text(s, &at, "id")?;
            if id.starts_with("source:") {
                return Err(malformed(
                    format!("{at}.id"),
                    format!("is \"{id}\", a source name, not a step id"),
                ));
            }
            let tool = text(s, &at, "tool")?;
            let inputs = match s.get("inputs") {
                None => Vec::new(),
                Some(Value::Null) => {
                    return Err(malformed(
                        format!("{at}.inputs"),
                        "is null: list the inputs, or leave the key out for a step with none",
                    ))
                }
                Some(Value::Array(a)) => a
                    .iter()
                    .enumerate()
                    .map(|(k, x)| match x {
                        Value::String(t) => Ok(t.clone()),
                        _ => Err(malformed(
                            format!("{at}.inputs[{k}]"),
                            "must be a string: a step id or a source",
                        )),
                    })
                    .collect::<Result<_, _>>()?,
                Some(_) => return Err(malformed(format!("{at}.inputs"), "must be an array")),
            };
            Ok(StepDecl { id, tool, inputs })
        })
        .collect()
}

/// Where the untrusted data of a path comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// An untrusted source (its name).
    Source(&'static str),
    /// The output of this step, whose tool's output is not trusted.
    ToolOutput(usize),
}

/// A path from untrusted data to a step: the origin, then the steps it passes, the last being
/// the step reached. `hops` holds at most [`MAX_HOPS`] steps; `elided` says earlier ones were
/// left out. For [`Origin::ToolOutput`], the first hop (when not elided) is that step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Path {
    pub origin: Origin,
    pub hops: Vec<usize>,
    pub elided: bool,
}

impl Path {
    /// The step reached.
    pub fn step(&self) -> usize {
        *self.hops.last().expect("a path has a step")
    }

    /// `source:webhook → read → refund`, or `read (untrusted output of tickets.read) → refund`.
    pub fn render(&self, steps: &[StepDecl]) -> String {
        let mut parts: Vec<String> = Vec::with_capacity(self.hops.len() + 2);
        match self.origin {
            Origin::Source(s) => parts.push(s.to_string()),
            Origin::ToolOutput(j) if self.elided => parts.push(format!(
                "{} (untrusted output of {})",
                steps[j].id, steps[j].tool
            )),
            Origin::ToolOutput(_) => {}
        }
        if self.elided {
            parts.push("…".to_string());
        }
        for (n, &h) in self.hops.iter().enumerate() {
            match self.origin {
                Origin::ToolOutput(j) if n == 0 && !self.elided && h == j => parts.push(format!(
                    "{} (untrusted output of {})",
                    steps[h].id, steps[h].tool
                )),
                _ => parts.push(steps[h].id.clone()),
            }
        }
        parts.join(" → ")
    }
}

/// The outcome of a publication check, steps in declaration order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Analysis {
    /// `destructive` or `financial` steps reached by untrusted data: the publication is refused.
    pub irreversible: Vec<Path>,
    /// `reversible_write` steps reached by untrusted data: they need a person's approval.
    pub needs_approval: Vec<Path>,
    /// Each step's tool, as the catalog has it.
    pub tools: Vec<ToolInfo>,
}

#[derive(Clone, Copy)]
enum Input {
    Source(usize),
    Step(usize),
}

/// Check a declaration against the tool catalog (`tool` looks a tool up; it is asked once per
/// step, in declaration order).
pub fn analyze(
    steps: &[StepDecl],
    mut tool: impl FnMut(&str) -> Option<ToolInfo>,
) -> Result<Analysis, DeclError> {
    let n = steps.len();
    let mut index: HashMap<&str, usize> = HashMap::with_capacity(n);
    for (i, s) in steps.iter().enumerate() {
        if let Some(&first) = index.get(s.id.as_str()) {
            return Err(DeclError::DuplicateId {
                id: s.id.clone(),
                first,
                again: i,
            });
        }
        index.insert(&s.id, i);
    }

    // Resolve the inputs: the graph's edges run from an input step to the step reading it.
    let mut inputs: Vec<Vec<Input>> = Vec::with_capacity(n);
    let mut readers: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut pending = vec![0usize; n];
    for (i, s) in steps.iter().enumerate() {
        let mut ins = Vec::with_capacity(s.inputs.len());
        for input in &s.inputs {
            if input.starts_with("source:") {
                match SOURCES.iter().position(|(name, _)| name == input) {
                    Some(k) => ins.push(Input::Source(k)),
                    None => {
                        return Err(DeclError::UnknownSource {
                            step: s.id.clone(),
                            source: input.clone(),
                        })
                    }
                }
            } else {
                match index.get(input.as_str()) {
                    Some(&j) => {
                        ins.push(Input::Step(j));
                        readers[j].push(i);
                        pending[i] += 1;
                    }
                    None => {
                        return Err(DeclError::UnknownInput {
                            step: s.id.clone(),
                            input: input.clone(),
                        })
                    }
                }
            }
        }
        inputs.push(ins);
    }

    let mut tools = Vec::with_capacity(n);
    for s in steps {
        match tool(&s.tool) {
            Some(t) => tools.push(t),
            None => {
                return Err(DeclError::UnknownTool {
                    step: s.id.clone(),
                    tool: s.tool.clone(),
                })
            }
        }
    }

    // Kahn's topological sort, steps without step inputs first, in declaration order.
    let mut order: Vec<usize> = (0..n).filter(|&i| pending[i] == 0).collect();
    let mut next = 0;
    while next < order.len() {
        let j = order[next];
        next += 1;
        for &i in &readers[j] {
            pending[i] -= 1;
            if pending[i] == 0 {
                order.push(i);
            }
        }
    }
    if order.len() < n {
        return Err(DeclError::Cycle {
            steps: find_cycle(steps, &inputs, &pending),
        });
    }

    // Taint, in topological order: which input made a step's inputs untrusted (`via`) and
    // where the untrusted data began (`origin`); whether its output is untrusted.
    let mut via: Vec<Option<Input>> = vec![None; n];
    let mut origin: Vec<Option<Origin>> = vec![None; n];
    let mut out_origin: Vec<Option<Origin>> = vec![None; n];
    for &i in &order {
        for &input in &inputs[i] {
            let o = match input {
                Input::Source(k) if !SOURCES[k].1 => Some(Origin::Source(SOURCES[k].0)),
                Input::Source(_) => None,
                Input::Step(j) => out_origin[j],
            };
            if let Some(o) = o {
                via[i] = Some(input);
                origin[i] = Some(o);
                break;
            }
        }
        out_origin[i] = origin[i].or((!tools[i].trusted_output).then_some(Origin::ToolOutput(i)));
    }

    let path = |sink: usize| -> Path {
        let o = origin[sink].expect("reported steps are tainted");
        let mut hops = vec![sink];
        let mut at = sink;
        let mut elided = false;
        // until an untrusted source, or a step whose own tool output is the origin
        while let Some(Input::Step(j)) = via[at] {
            if hops.len() == MAX_HOPS {
                elided = true;
                break;
            }
            hops.push(j);
            if origin[j].is_none() {
                break;
            }
            at = j;
        }
        hops.reverse();
        Path {
            origin: o,
            hops,
            elided,
        }
    };

    let mut irreversible = Vec::new();
    let mut needs_approval = Vec::new();
    for i in 0..n {
        if origin[i].is_none() {
            continue;
        }
        if tools[i].effect.is_irreversible() {
            irreversible.push(path(i));
        } else if tools[i].effect == Effect::ReversibleWrite {
            needs_approval.push(path(i));
        }
    }
    Ok(Analysis {
        irreversible,
        needs_approval,
        tools,
    })
}

/// A cycle among the steps Kahn's sort could not order (each has an unordered step input):
/// walk unordered inputs until a step repeats.
fn find_cycle(steps: &[StepDecl], inputs: &[Vec<Input>], pending: &[usize]) -> Vec<String> {
    let start = pending.iter().position(|&p| p > 0).expect("a step is left");
    let mut seen = vec![usize::MAX; steps.len()];
    let mut walk = Vec::new();
    let mut at = start;
    while seen[at] == usize::MAX {
        seen[at] = walk.len();
        walk.push(at);
        at = inputs[at]
            .iter()
            .find_map(|x| match *x {
                Input::Step(j) if pending[j] > 0 => Some(j),
                _ => None,
            })
            .expect("an unordered step has an unordered input");
    }
    // walk[seen[at]..] is the cycle, each step reading the next: print it input first, from
    // the step declared first
    let mut cycle: Vec<usize> = walk[seen[at]..].iter().rev().copied().collect();
    let first = (0..cycle.len()).min_by_key(|&k| cycle[k]).unwrap_or(0);
    cycle.rotate_left(first);
    cycle.push(cycle[0]);
    cycle.into_iter().map(|i| steps[i].id.clone()).collect()
}

#[cfg(test)]
mod tests;
