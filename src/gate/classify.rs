//! How a policy classifies tools and gates calls (`spec/hooks.md` §15.3, §10.2, §5.1 step 3):
//! the name a tool is known by in the policy, whether the policy classifies it at all, and
//! whether it gates a call ([`Policy::gates`]). A tool that no key of the policy names
//! (`sensitive_tools`, a `[tools.*]` table, `read_only_tools`) is *unknown*; the fronts gate
//! it, every argument as a sensitive tool's, unless the policy says `unknown_tools = "allow"`.

use super::{extract, Policy, ToolCall, UnknownTools};
use serde_json::{Map, Value};

/// The names Claude Code and Codex give their own tools, which an MCP tool of the same bare
/// name (`mcp__<server>__Read`, chosen by whoever wrote the server) is not: such a tool is
/// known by its full name, so a policy's entry for the agent's tool (`Read` read-only, `Write`
/// gated only for the write paths) does not decide it (`spec/hooks.md` §15.3; attack review
/// 40, `tests/tool_identity.rs`). The shell tools (`Bash`, `shell`, `exec_command`) are not
/// listed: an MCP tool named like one is judged as the shell it claims to be, always gated
/// and its command read as a command, which is stricter than an unknown tool's values.
///
/// Sources: Claude Code's tools (*Settings*, "Tools available to Claude",
/// <https://code.claude.com/docs/en/settings>); Codex's (`codex-rs/core/src/tools/handlers/`
/// of <https://github.com/openai/codex>).
pub(crate) const AGENT_TOOLS: &[&str] = &[
    // Claude Code
    "Agent",
    "AskUserQuestion",
    "BashOutput",
    "Edit",
    "EnterPlanMode",
    "ExitPlanMode",
    "Glob",
    "Grep",
    "KillBash",
    "KillShell",
    "LS",
    "ListMcpResourcesTool",
    "MultiEdit",
    "NotebookEdit",
    "NotebookRead",
    "Read",
    "ReadMcpResourceTool",
    "Skill",
    "SlashCommand",
    "Task",
    "TodoRead",
    "TodoWrite",
    "WebFetch",
    "WebSearch",
    "Write",
    // Codex
    "apply_patch",
    "update_plan",
    "view_image",
    "write_stdin",
];

/// Whether a policy gates a call ([`Policy::gates`]).
///
/// Exhaustive: this is a decision before lineage; a new answer must break every caller's build
/// rather than fall into a wildcard arm that might let a call pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gating {
    /// The policy gates the call: its arguments' lineage decides.
    Gate,
    /// The policy lets the call pass ungated: a read-only tool, a sensitive tool whose path
    /// condition (`when`, `spec/hooks.md` §10.2) does not hold, or an unknown tool under
    /// `unknown_tools = "allow"`.
    Pass,
    /// The policy gates the call only if the file its `writes` parameter names is a gated
    /// write path (`spec/hooks.md` §17.3). The policy alone cannot say: the write paths are
    /// resolved against the home and working directories, which the caller knows (the
    /// fronts judge it by their write rules).
    GateIfWritesGated,
}

impl Policy {
    /// The name `tool` is known by in this policy: `tool` itself if the policy names it, else
    /// for an MCP tool `mcp__<server>__<name>` (the form Claude Code and Codex give) the bare
    /// `<name>` if the policy names that and it is not one of the agents' own tools
    /// (an MCP tool called `Read` is not Claude Code's `Read`), else `tool`
    /// (`spec/hooks.md` §5.1 step 3, §15.3).
    pub fn tool_name<'t>(&self, tool: &'t str) -> &'t str {
        if self.names(tool) {
            return tool;
        }
        match tool
            .strip_prefix("mcp__")
            .and_then(|rest| rest.split_once("__"))
        {
            Some((_, bare)) if self.names(bare) && !AGENT_TOOLS.contains(&bare) => bare,
            _ => tool,
        }
    }

    /// Whether this policy classifies `tool` (as the agent names it, [`Policy::tool_name`]).
    pub fn classifies(&self, tool: &str) -> bool {
        self.names(self.tool_name(tool))
    }

    /// The names in `tools` that this policy does not classify, sorted and without
    /// duplicates: what `hook doctor` and the Python front warn about.
    pub fn unclassified<'a>(&self, tools: impl IntoIterator<Item = &'a str>) -> Vec<String> {
        let mut out: Vec<String> = tools
            .into_iter()
            .filter(|t| !t.is_empty() && !self.classifies(t))
            .map(str::to_string)
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// Whether this policy gates a call of `tool` (as the agent names it, resolved by
    /// [`Policy::tool_name`]) with `args` (`spec/hooks.md` §5.1 step 3): a read-only tool
    /// passes; a tool the policy marks sensitive is gated when its path condition holds
    /// ([`extract::applies`], §10.2), else gated if it writes a gated file
    /// ([`Gating::GateIfWritesGated`], §17.3) when it names a `writes` parameter, else passes;
    /// a tool no policy key names is gated unless `unknown_tools = "allow"` (fail closed,
    /// §15.3). The runtime's own sensitive mark is not seen here ([`ToolCall::sensitive`]).
    pub fn gates(&self, tool: &str, args: &Map<String, Value>) -> Gating {
        let name = self.tool_name(tool);
        let call = ToolCall {
            tool: name.to_string(),
            ..Default::default()
        };
        if self.read_only_tools.contains(name) {
            Gating::Pass
        } else if self.is_sensitive(&call) {
            if extract::applies(self, name, args) {
                Gating::Gate
            } else if self.tools.get(name).is_some_and(|t| t.writes.is_some()) {
                Gating::GateIfWritesGated
            } else {
                Gating::Pass
            }
        } else if !self.names(name) && self.unknown_tools == UnknownTools::Gate {
            Gating::Gate
        } else {
            Gating::Pass
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::CODING_POLICY_TOML;
    use serde_json::json;

    #[test]
    fn mcp_tools_are_known_by_their_bare_name_and_unknown_ones_are_listed() {
        let p = Policy::from_toml(CODING_POLICY_TOML).unwrap();
        assert_eq!(p.tool_name("mcp__bank__send_money"), "send_money");
        assert_eq!(p.tool_name("mcp__bank__Read"), "mcp__bank__Read");
        assert_eq!(p.tool_name("mcp__fs__read_file"), "read_file");
        assert_eq!(p.tool_name("mcp__sh__Bash"), "Bash");
        assert!(!p.classifies("mcp__bank__Read"));
        assert_eq!(
            p.tool_name("mcp__pay__transfer_funds"),
            "mcp__pay__transfer_funds"
        );
        assert!(p.classifies("Read") && p.classifies("Bash"));
        assert_eq!(
            p.unclassified(["Bash", "mcp__pay__transfer_funds", "Read", "x", "x", ""]),
            ["mcp__pay__transfer_funds", "x"]
        );
    }

    #[test]
    fn read_only_passes_unknown_is_gated_and_a_writes_tool_defers_to_the_write_paths() {
        let p = Policy::from_toml(
            "default_max_label = \"trusted\"\nsensitive_tools = [\"pay\"]\n\
             read_only_tools = [\"look\"]\n\
             [tools.Write]\nwrites = \"file_path\"\n\
             [tools.Edit]\nwhen = { file_path = [\"**/.env\"] }\n",
        )
        .unwrap();
        let args = |v: serde_json::Value| v.as_object().cloned().unwrap();
        let none = Map::new();
        assert_eq!(p.gates("look", &none), Gating::Pass);
        assert_eq!(p.gates("pay", &none), Gating::Gate);
        assert_eq!(p.gates("mcp__bank__pay", &none), Gating::Gate);
        assert_eq!(p.gates("unheard_of", &none), Gating::Gate);
        assert_eq!(p.gates("Write", &none), Gating::GateIfWritesGated);
        let env = args(json!({"file_path": "/p/.env"}));
        assert_eq!(p.gates("Edit", &env), Gating::Gate);
        assert_eq!(
            p.gates("Edit", &args(json!({"file_path": "a.rs"}))),
            Gating::Pass
        );
        let allow =
            Policy::from_toml("default_max_label = \"trusted\"\nunknown_tools = \"allow\"\n")
                .unwrap();
        assert_eq!(allow.gates("unheard_of", &none), Gating::Pass);
    }

    /// As `Front::screen` had it before `gates` (`applies(..) || gated_write(..)`): a path
    /// condition that does not hold leaves a tool that writes files to the write paths, it
    /// does not let it pass; an MCP tool is judged by the table of its bare name.
    #[test]
    fn a_when_that_does_not_hold_still_defers_a_writes_tool_to_the_write_paths() {
        let p = Policy::from_toml(
            "default_max_label = \"trusted\"\n\
             [tools.save]\nwrites = \"path\"\nwhen = { path = [\"**/.env\"] }\n",
        )
        .unwrap();
        let args = |v: serde_json::Value| v.as_object().cloned().unwrap();
        for tool in ["save", "mcp__files__save"] {
            assert_eq!(
                p.gates(tool, &args(json!({"path": "/p/.env"}))),
                Gating::Gate
            );
            assert_eq!(
                p.gates(tool, &args(json!({"path": "/p/notes.md"}))),
                Gating::GateIfWritesGated,
                "{tool}"
            );
        }
        assert_eq!(p.tool_name("mcp__files__save"), "save");
    }
}
