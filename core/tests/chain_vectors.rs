//! Known answers of the canonical encoding (README, "Proving the trail"): hashes computed by
//! the encoder of 0.2.0 (unreleased, commit 5ee5aae), which any later one, and any
//! re-implementation, must give again for the same content.

use pg_labels_core::chain::{self, RunOpening, StepContent};
use pg_labels_core::labelset::{self, LabelSet};

fn set(text: &str) -> Vec<u8> {
    labelset::parse(text.as_bytes()).expect("a labelset")
}

fn answers() -> [String; 4] {
    let opened = set("{area:acme/platform}");
    let run = RunOpening {
        id: [0x11; 16],
        agent: Some("support-bot"),
        agent_version: Some(3),
        scope: "acme/platform",
        labels: LabelSet::from_canonical(&opened),
        listener_id: None,
        opened_at: 850_000_000_000_000,
    };
    let genesis = chain::genesis(&run);
    let own = set("{area:acme/platform,origin:tool,tag:pii}");
    let after = chain::labels_next(&genesis, LabelSet::from_canonical(&own));
    // every field, one (args) longer than many SHA-256 blocks
    let args = format!("{{\"ticket\": 42, \"body\": \"{}\"}}", "x".repeat(700));
    let crossings = [7i64, 9];
    let leaf = chain::leaf(&StepContent {
        id: 12_345,
        run_id: [0x11; 16],
        kind: "tool_called",
        tool: Some("tickets.read"),
        labels: LabelSet::from_canonical(&own),
        args: Some(&args),
        decision: Some("allow"),
        rule: None,
        reason: None,
        request_id: Some(77),
        origin_run: None,
        artifact_id: Some([0x22; 16]),
        digest: Some("sha256:abc"),
        share_id: None,
        crossing_ids: Some(&crossings),
        actor: "agent_role",
        created_at: 850_000_000_123_456,
        scope: "acme/platform",
        labels_after: after,
        expires_at: None,
    });
    let hash = chain::link(&genesis, &leaf);
    [genesis, after, leaf, hash].map(|h| chain::hex(&h))
}

#[test]
fn canonical_encoding_known_answers() {
    let got = answers();
    let want = [
        "3a7a77963837dfe4b9e815a52b1fe252e5b8ffcf35b434e7810dffb64b96f055", // genesis
        "4d7b0c2c2bad881ea561dbadbd0041769149ce6100873193501caa3f1fbd5feb", // labels after
        "543b45be5623c9b1cba7fb0890635da4c583bfa24ff3710eee6d06f5b2df5596", // leaf
        "1cb5cbf24f79565e745d4bada9dcd3429cb3afe2d0d4d17c46a6fa39d852dc53", // link
    ];
    assert_eq!(got, want.map(String::from));
}
