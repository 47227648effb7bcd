//! Names a client wrote — an agent's name, title, version, the bridge it came through, its
//! project — cut to fit a card's head. Both sides apply the rule: the agent side to what it
//! sends, the host to every `hello` and `ask`, for agents that did not (DESIGN.md §3).

use crate::wire::protocol::AgentInfo;

/// The longest project or agent name passed on, in characters: a card's head has room for a
/// name, not a paragraph, and a longer one is cut with "…".
pub const MAX_LABEL_CHARS: usize = 64;

/// Each part of `agent` cut to [`MAX_LABEL_CHARS`] (the host does it to every `hello`, for
/// agents that did not).
pub fn capped_agent(agent: AgentInfo) -> AgentInfo {
    AgentInfo {
        name: cap(&agent.name),
        title: agent.title.as_deref().map(cap),
        version: agent.version.as_deref().map(cap),
        via: agent.via.as_deref().map(cap),
    }
}

/// `text` cut to [`MAX_LABEL_CHARS`] characters, the last of them "…" when it was longer.
pub fn cap(text: &str) -> String {
    if text.chars().count() <= MAX_LABEL_CHARS {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(MAX_LABEL_CHARS - 1).collect();
    cut.push('…');
    cut
}

/// A project name as given, trimmed and cut; `None` when nothing is left.
pub fn project_name(given: &str) -> Option<String> {
    let name = given.trim();
    (!name.is_empty()).then(|| cap(name))
}
