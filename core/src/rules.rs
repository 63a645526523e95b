//! The vocabulary of the rules: what a tool does, the rules by name, and the three decisions.
//! The decisions themselves are in [`crate::barrier`]; what a refusal says is in
//! [`crate::refusal`].

/// What a tool does, from the tool catalog.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Effect {
    Read,
    ReversibleWrite,
    Destructive,
    Financial,
}

impl Effect {
    pub const ALL: [Effect; 4] = [
        Effect::Read,
        Effect::ReversibleWrite,
        Effect::Destructive,
        Effect::Financial,
    ];

    pub fn parse(s: &str) -> Option<Effect> {
        Effect::ALL.into_iter().find(|e| e.name() == s)
    }

    pub fn name(self) -> &'static str {
        match self {
            Effect::Read => "read",
            Effect::ReversibleWrite => "reversible_write",
            Effect::Destructive => "destructive",
            Effect::Financial => "financial",
        }
    }

    /// Cannot be undone: no untrusted data may reach it, approved or not.
    pub fn is_irreversible(self) -> bool {
        matches!(self, Effect::Destructive | Effect::Financial)
    }
}

/// The rules, by the names the trail and the errors use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    DataBarrier,
    UntrustedToIrreversible,
    ApprovalRequired,
    UnknownTool,
    /// The trail is append-only and a run's scope never changes.
    Sealed,
}

impl Rule {
    pub const ALL: [Rule; 5] = [
        Rule::DataBarrier,
        Rule::UntrustedToIrreversible,
        Rule::ApprovalRequired,
        Rule::UnknownTool,
        Rule::Sealed,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Rule::DataBarrier => "data_barrier",
            Rule::UntrustedToIrreversible => "untrusted_to_irreversible",
            Rule::ApprovalRequired => "approval_required",
            Rule::UnknownTool => "unknown_tool",
            Rule::Sealed => "sealed",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    Allow,
    Ask,
    Block,
}

impl Decision {
    pub fn name(self) -> &'static str {
        match self {
            Decision::Allow => "allow",
            Decision::Ask => "ask",
            Decision::Block => "block",
        }
    }
}
