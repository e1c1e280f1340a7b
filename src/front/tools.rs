//! How a policy classifies tools (`spec/hooks.md` §15.3): the name a tool is known by in the
//! policy, and whether the policy classifies it at all. A tool that no key of the policy names
//! (`sensitive_tools`, a `[tools.*]` table, `read_only_tools`) is *unknown*; the fronts gate it,
//! every argument as a sensitive tool's, unless the policy says `unknown_tools = "allow"`.

use crate::gate::Policy;

/// The name `tool` is known by in `policy`: `tool` itself if the policy names it, else for an
/// MCP tool `mcp__<server>__<name>` (the form Claude Code and Codex give) the bare `<name>` if
/// the policy names that, else `tool`.
pub fn policy_name<'t>(policy: &Policy, tool: &'t str) -> &'t str {
    if policy.names(tool) {
        return tool;
    }
    match tool
        .strip_prefix("mcp__")
        .and_then(|rest| rest.split_once("__"))
    {
        Some((_, bare)) if policy.names(bare) => bare,
        _ => tool,
    }
}

/// Whether `policy` classifies `tool` (as the agent names it, [`policy_name`]).
pub fn classifies(policy: &Policy, tool: &str) -> bool {
    policy.names(policy_name(policy, tool))
}

/// The names in `tools` that `policy` does not classify, sorted and without duplicates: what
/// `hook doctor` and the Python front warn about.
pub fn unclassified<'a>(policy: &Policy, tools: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut out: Vec<String> = tools
        .into_iter()
        .filter(|t| !t.is_empty() && !classifies(policy, t))
        .map(str::to_string)
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The tool names a Claude Code or Codex settings file declares: matchers of hook groups that
/// are names or `|` lists of names (regular expressions are skipped), and the tool of each
/// Claude Code permission rule (`permissions.allow` / `ask` / `deny`: `Bash(npm test)` names
/// `Bash`). `*` and empty matchers name nothing.
pub fn declared(settings: &serde_json::Value) -> Vec<String> {
    let is_name = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    };
    let mut out = Vec::new();
    for groups in settings["hooks"]
        .as_object()
        .into_iter()
        .flat_map(|m| m.values())
    {
        for g in groups.as_array().into_iter().flatten() {
            if let Some(m) = g["matcher"].as_str() {
                out.extend(m.split('|').filter(|n| is_name(n)).map(str::to_string));
            }
        }
    }
    for kind in ["allow", "ask", "deny"] {
        for rule in settings["permissions"][kind]
            .as_array()
            .into_iter()
            .flatten()
        {
            let name = rule.as_str().unwrap_or("").split('(').next().unwrap_or("");
            if is_name(name) {
                out.push(name.to_string());
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::CODING_POLICY_TOML;
    use serde_json::json;

    #[test]
    fn mcp_tools_are_known_by_their_bare_name_and_unknown_ones_are_listed() {
        let p = Policy::from_toml(CODING_POLICY_TOML).unwrap();
        assert_eq!(policy_name(&p, "mcp__bank__send_money"), "send_money");
        assert_eq!(
            policy_name(&p, "mcp__pay__transfer_funds"),
            "mcp__pay__transfer_funds"
        );
        assert!(classifies(&p, "Read") && classifies(&p, "Bash"));
        assert_eq!(
            unclassified(
                &p,
                ["Bash", "mcp__pay__transfer_funds", "Read", "x", "x", ""]
            ),
            ["mcp__pay__transfer_funds", "x"]
        );
    }

    #[test]
    fn settings_declare_names_not_patterns() {
        let s = json!({
            "hooks": {"PreToolUse": [{"matcher": "*"}, {"matcher": "Edit|Write"},
                                     {"matcher": "mcp__.*"}, {"matcher": "mcp__pay__transfer"}]},
            "permissions": {"allow": ["Bash(npm test:*)", "WebFetch"], "deny": ["Read(./.env)"]}
        });
        assert_eq!(
            declared(&s),
            [
                "Bash",
                "Edit",
                "Read",
                "WebFetch",
                "Write",
                "mcp__pay__transfer"
            ]
        );
    }
}
