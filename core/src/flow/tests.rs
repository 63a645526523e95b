//! The publication check's tests: the spec's example refused with its path, taint through steps
//! and tool outputs, malformed declarations, cycles, long paths elided.

use super::*;

fn catalog(name: &str) -> Option<ToolInfo> {
    let (effect, trusted_output) = match name {
        "tickets.read" => (Effect::Read, false),
        "kb.search" => (Effect::Read, true),
        "summarize" => (Effect::Read, true),
        "tickets.update" => (Effect::ReversibleWrite, true),
        "stripe.refund" => (Effect::Financial, true),
        "db.drop" => (Effect::Destructive, true),
        _ => return None,
    };
    Some(ToolInfo {
        effect,
        trusted_output,
    })
}

fn check(json: &str) -> Result<(Vec<String>, Vec<String>), DeclError> {
    let steps = parse(json)?;
    let a = analyze(&steps, catalog)?;
    Ok((
        a.irreversible.iter().map(|p| p.render(&steps)).collect(),
        a.needs_approval.iter().map(|p| p.render(&steps)).collect(),
    ))
}

#[test]
fn the_specs_example_is_refused_with_its_path() {
    let r = check(
        r#"{"steps": [
          {"id": "read",   "tool": "tickets.read",  "inputs": ["source:webhook"]},
          {"id": "refund", "tool": "stripe.refund", "inputs": ["read"]}
        ]}"#,
    )
    .unwrap();
    assert_eq!(r.0, vec!["source:webhook → read → refund"]);
}

#[test]
fn taint_is_transitive_and_tool_outputs_count() {
    // trusted tool on trusted input: trusted; untrusted tool output taints even from the agent
    let r = check(
        r#"{"steps": [
          {"id": "kb", "tool": "kb.search", "inputs": ["source:agent"]},
          {"id": "pay", "tool": "stripe.refund", "inputs": ["kb"]},
          {"id": "t", "tool": "tickets.read", "inputs": ["source:agent"]},
          {"id": "sum", "tool": "summarize", "inputs": ["kb", "t"]},
          {"id": "drop", "tool": "db.drop", "inputs": ["sum"]},
          {"id": "upd", "tool": "tickets.update", "inputs": ["sum"]},
          {"id": "upd2", "tool": "tickets.update", "inputs": ["kb"]}
        ]}"#,
    )
    .unwrap();
    assert_eq!(
        r.0,
        vec!["t (untrusted output of tickets.read) → sum → drop"]
    );
    assert_eq!(
        r.1,
        vec!["t (untrusted output of tickets.read) → sum → upd"]
    );
    // a trusted output stays trusted only when all its inputs are
    let r = check(
        r#"{"steps": [
          {"id": "s", "tool": "summarize", "inputs": ["source:agent", "source:slack"]},
          {"id": "p", "tool": "stripe.refund", "inputs": ["s"]}
        ]}"#,
    )
    .unwrap();
    assert_eq!(r.0, vec!["source:slack → s → p"]);
    // the irreversible step itself reading a source directly; no inputs at all is trusted
    let r = check(
        r#"{"steps": [{"id": "p", "tool": "stripe.refund", "inputs": ["source:event"]},
                      {"id": "q", "tool": "stripe.refund"}]}"#,
    )
    .unwrap();
    assert_eq!(r.0, vec!["source:event → p"]);
}

#[test]
fn malformed_declarations() {
    let e = |j: &str| check(j).unwrap_err().to_string();
    assert_eq!(
        e("[]"),
        "the declaration must be an object with a \"steps\" array"
    );
    assert_eq!(e("{}"), "the declaration has no \"steps\"");
    assert_eq!(e(r#"{"steps": {}}"#), "steps must be an array");
    assert_eq!(
        e(r#"{"steps": [1]}"#),
        "steps[0] must be an object with \"id\", \"tool\" and \"inputs\""
    );
    assert_eq!(
        e(r#"{"steps": [{"tool": "kb.search"}]}"#),
        "steps[0] has no \"id\""
    );
    assert_eq!(
        e(r#"{"steps": [{"id": " ", "tool": "kb.search"}]}"#),
        "steps[0].id must not be empty"
    );
    assert_eq!(
        e(r#"{"steps": [{"id": 3, "tool": "kb.search"}]}"#),
        "steps[0].id must be a string"
    );
    assert_eq!(e(r#"{"steps": [{"id": "a"}]}"#), "steps[0] has no \"tool\"");
    assert_eq!(
        e(r#"{"steps": [{"id": "a", "tool": "kb.search", "inputs": "source:agent"}]}"#),
        "steps[0].inputs must be an array"
    );
    assert_eq!(
        e(r#"{"steps": [{"id": "a", "tool": "kb.search", "inputs": [null]}]}"#),
        "steps[0].inputs[0] must be a string: a step id or a source"
    );
    assert_eq!(
        e(r#"{"steps": [{"id": "source:slack", "tool": "kb.search"}]}"#),
        "steps[0].id is \"source:slack\", a source name, not a step id"
    );
    assert_eq!(
        e(r#"{"steps": [{"id": "a", "tool": "kb.search"}, {"id": "a", "tool": "kb.search"}]}"#),
        "steps[1] repeats id \"a\" of steps[0]"
    );
    assert!(
        e(r#"{"steps": [{"id": "a", "tool": "kb.search", "inputs": ["source:email"]}]}"#)
            .starts_with("step \"a\" reads unknown source \"source:email\"")
    );
    assert_eq!(
        e(r#"{"steps": [{"id": "a", "tool": "kb.search", "inputs": ["b"]}]}"#),
        "step \"a\" reads \"b\", which is no declared step"
    );
    assert_eq!(
        e(r#"{"steps": [{"id": "a", "tool": "shell.exec"}]}"#),
        "step \"a\" calls tool \"shell.exec\", which the tool catalog does not list"
    );
    assert!(e("{").starts_with("the declaration is not JSON"));
    assert_eq!(check(r#"{"steps": []}"#).unwrap(), (vec![], vec![]));
}

#[test]
fn cycles_are_named() {
    let e = check(
        r#"{"steps": [
          {"id": "start", "tool": "kb.search", "inputs": ["source:agent"]},
          {"id": "a", "tool": "kb.search", "inputs": ["start", "c"]},
          {"id": "b", "tool": "kb.search", "inputs": ["a"]},
          {"id": "c", "tool": "kb.search", "inputs": ["b"]}
        ]}"#,
    )
    .unwrap_err();
    assert_eq!(e.to_string(), "the steps form a cycle: a → b → c → a");
    let e = check(r#"{"steps": [{"id": "x", "tool": "kb.search", "inputs": ["x"]}]}"#).unwrap_err();
    assert_eq!(e.to_string(), "the steps form a cycle: x → x");
}

#[test]
fn long_paths_elide_their_middle() {
    let mut steps =
        vec![r#"{"id": "s0", "tool": "kb.search", "inputs": ["source:slack"]}"#.to_string()];
    for i in 1..40 {
        steps.push(format!(
            r#"{{"id": "s{i}", "tool": "kb.search", "inputs": ["s{}"]}}"#,
            i - 1
        ));
    }
    steps.push(r#"{"id": "pay", "tool": "stripe.refund", "inputs": ["s39"]}"#.to_string());
    let r = check(&format!(r#"{{"steps": [{}]}}"#, steps.join(","))).unwrap();
    assert_eq!(r.0.len(), 1);
    assert!(
        r.0[0].starts_with("source:slack → … → s25 → "),
        "{}",
        r.0[0]
    );
    assert!(r.0[0].ends_with("s39 → pay"));
    assert_eq!(r.0[0].matches(" → ").count(), MAX_HOPS + 1);
}
