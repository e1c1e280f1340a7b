//! The tools an agent's settings declare (`spec/hooks.md` §15.3): what `hook doctor` checks
//! against the policy's classification ([`crate::gate::Policy::unclassified`]).

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
    use serde_json::json;

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
