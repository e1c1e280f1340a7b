//! `hook doctor`'s notes on tools the policy does not classify (spec/hooks.md §15.3): the tools
//! the ledger has seen (its `tool:<name>` principals) and those the settings declare (hook
//! matchers, Claude Code permission rules), checked against the policy the PreToolUse hook
//! runs with. Unclassified tools are gated like sensitive ones (`unknown_tools = "gate"`), so
//! a read-only one the policy forgot can refuse benign calls: name it in `read_only_tools`.

use crate::open::{load_policy, open};
use memlineage::front::tools;
use memlineage::gate::{Policy, UnknownTools};
use memlineage::record::Role;
use std::path::PathBuf;

/// The notes for `settings`, whose memlineage PreToolUse command is `pre` (`None`: no notes,
/// the doctor reports the missing hook already).
pub fn notes(settings: &serde_json::Value, pre: Option<&str>) -> Vec<String> {
    let Some(pre) = pre else {
        return Vec::new();
    };
    let (ledger, policy) = ledger_and_policy(pre);
    // The hooks' default: the coding policy (spec/hooks.md §10).
    let policy = match policy.map_or_else(|| Ok(Policy::coding()), |p| load_policy(Some(p))) {
        Ok(p) => p,
        Err(e) => return vec![format!("tools: the hook's policy cannot be read: {e}")],
    };
    let mut seen = Vec::new();
    let mut notes = Vec::new();
    match ledger.map(|l| open(&l)) {
        Some(Ok((l, _))) => seen = l.principal_names(Role::Tool),
        Some(Err(e)) => notes.push(format!("tools: the ledger's tools cannot be listed: {e}")),
        None => notes.push("tools: the PreToolUse command names no ledger".into()),
    }
    let seen: Vec<String> = seen
        .iter()
        .map(|n| n.strip_prefix("tool:").unwrap_or(n).to_string())
        // The doctor's own synthetic tools (`mcp__doctor__read_file`).
        .filter(|n| !n.starts_with("mcp__doctor__"))
        .collect();
    let declared = tools::declared(settings);
    let how = match policy.unknown_tools {
        UnknownTools::Gate => "gated as sensitive (unknown_tools = \"gate\")",
        _ => "not gated (unknown_tools = \"allow\")",
    };
    for (what, names) in [
        ("seen in the ledger", &seen),
        ("declared in the settings", &declared),
    ] {
        let missing = policy.unclassified(names.iter().map(String::as_str));
        if !missing.is_empty() {
            notes.push(format!(
                "tools {what} that the policy does not classify, hence {how}: {}; name them \
                 in the policy (sensitive_tools, [tools.*] or read_only_tools)",
                missing.join(", ")
            ));
        }
    }
    notes
}

/// The ledger and `--policy` of a `memlineage hook pre-tool-use LEDGER …` command.
fn ledger_and_policy(cmd: &str) -> (Option<PathBuf>, Option<PathBuf>) {
    // The command proper ends where the fail-closed wrapping begins.
    let head = cmd.split(" || ").next().unwrap_or(cmd);
    let words = shlex::split(head).unwrap_or_default();
    let at = words.iter().position(|w| w == "pre-tool-use");
    let ledger = at.and_then(|i| words.get(i + 1)).map(PathBuf::from);
    let policy = words
        .iter()
        .position(|w| w == "--policy")
        .and_then(|i| words.get(i + 1))
        .map(PathBuf::from);
    (ledger, policy)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ledger_and_policy_are_read_from_the_command() {
        let c = "'/b/memlineage' hook pre-tool-use '/l d/a.ledger' --agent codex --policy \
                 '/p.toml' --state '/s' || { s=$?; exit 2; }";
        assert_eq!(
            ledger_and_policy(c),
            (Some("/l d/a.ledger".into()), Some("/p.toml".into()))
        );
        assert_eq!(ledger_and_policy("true"), (None, None));
    }
}
