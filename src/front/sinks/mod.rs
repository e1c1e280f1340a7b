//! Code and persistence sinks (`spec/hooks.md` §17): calls whose harm does not depend on a
//! value they carry, so that value provenance alone cannot judge them.
//!
//! - A command that **runs code it builds from data** (`echo … | xxd -r -p | sh`,
//!   `eval "$(…)"`, `source <(…)`, `bash -c "$X"`) runs whatever the data decodes to: the
//!   data may be split, encoded or fetched so that no word of it matches what was read.
//! - A command that **installs a package by name** (`pip install`, `npm install -g`, `npx`)
//!   runs that package's code, and a name is short and plausible (`reqeusts-toolbelt2`).
//! - A call that **writes a file a tool runs or an agent loads** (CI, git hooks, `Makefile`,
//!   `conftest.py`, editor tasks, `CLAUDE.md` and what it imports) carries its content into
//!   a later run or session that records no read of it.
//!
//! After the session has read untrusted input, such a call is put to the user (the policy's
//! `composed_after_external`, `ask` in the coding policy) unless the user stated where the
//! code comes from (every payload value, §17.1) or every package it installs (§17.2); a
//! gated write is judged as a composed call whatever its words (§17.3). Values copied from
//! untrusted text are denied by the gate first: a sink's payload and written text are
//! matched values of the call.

pub mod command;
pub mod writes;

use super::{Front, Keys, Session, Verdict};
use crate::front::protect::pattern::{candidate, Candidate, Pat};
use crate::front::protect::shell::{command_text, is_shell_tool};
use crate::gate::extract;
use crate::gate::{Composed, ToolCall, ValueKind};
use crate::record::EntryId;
use crate::store::Store;
use serde_json::{Map, Value};
use std::path::PathBuf;
use writes::{Gated, Imports};

/// What a call does that §17 judges.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Sink {
    /// It runs code it builds from data; how.
    RunsData {
        /// How (`pipes data into sh`).
        how: String,
    },
    /// It installs, or fetches and runs, a package the user did not name.
    Installs {
        /// The package as written.
        spec: String,
        /// The untrusted read that names it, when one does (the name was copied).
        named_by: Option<EntryId>,
    },
    /// It writes a gated file.
    Writes {
        /// The file.
        path: String,
        /// Why its writes are gated.
        why: Gated,
    },
}

impl std::fmt::Display for Sink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Sink::RunsData { how } => write!(
                f,
                "it runs code it builds from data ({how}), and the user did not state where \
                 that code comes from"
            ),
            Sink::Installs { spec, named_by } => {
                write!(f, "it installs the package {}", crate::quote::name(spec))?;
                match named_by {
                    Some(e) => write!(
                        f,
                        ", which untrusted entry {} names and the user did not",
                        e.short()
                    ),
                    None => write!(f, ", which the user did not name"),
                }
            }
            Sink::Writes { path, why } => {
                write!(f, "it writes {}, {why}", crate::quote::name(path))
            }
        }
    }
}

/// The §17 facts of one call, found once per check.
#[derive(Clone, Debug, Default)]
pub(crate) struct CallSinks {
    /// The parameter holding the command, or naming the file written.
    param: Option<String>,
    /// Values of that parameter matched besides its own (§4.5): a code sink's payload, the
    /// text a command writes to a gated file.
    extra: Vec<String>,
    /// How the command runs code built from data, and that code's payload.
    runs_data: Option<(String, Vec<String>)>,
    /// The packages it installs.
    installs: Vec<String>,
    /// The gated files it writes.
    writes: Vec<(String, Gated)>,
}

impl CallSinks {
    /// The values of `param` matched besides those of its match kind.
    pub(crate) fn extra_values(&self, param: &str) -> &[String] {
        match &self.param {
            Some(p) if p == param => &self.extra,
            _ => &[],
        }
    }

    /// Whether `param` is matchable whatever its values: it runs code built from data or
    /// writes a gated file, so "nothing to match" does not make it harmless (§17). Installs
    /// are judged by [`Front::sink_verdict`] alone: a package the user named leaves the
    /// call as it is.
    pub(crate) fn forces(&self, param: &str) -> bool {
        self.param.as_deref() == Some(param)
            && (self.runs_data.is_some() || !self.writes.is_empty())
    }

    /// The first gated write, for the receipt of a composed call.
    pub(crate) fn write(&self) -> Option<Sink> {
        self.writes.first().map(|(path, why)| Sink::Writes {
            path: path.clone(),
            why: why.clone(),
        })
    }
}

impl<S: Store, K: Keys> Front<S, K> {
    /// The §17 facts of a call of `tool` (as the agent names it) with `args`: for a shell
    /// tool's command, what the command does; for a tool whose policy names the parameter it
    /// `writes`, the gated file it writes.
    pub(crate) fn call_sinks(&self, tool: &str, args: &Map<String, Value>) -> CallSinks {
        let name = self.policy_name(tool);
        let bare = tool
            .strip_prefix("mcp__")
            .and_then(|r| r.split_once("__"))
            .map_or(tool, |(_, t)| t);
        let cwd = self.call_cwd(args);
        let rules = &self.write_rules;
        let mut imports = Imports::default();
        rules.start(&mut imports, cwd.as_deref());
        let mut out = CallSinks::default();
        let shell = is_shell_tool(name) || is_shell_tool(bare);
        for (param, value) in args {
            let is_command = matches!(param.as_str(), "command" | "cmd")
                && self.policy.value_kind(name, param) == ValueKind::Command;
            if !(shell && is_command) {
                continue;
            }
            let Some(text) = command_text(value) else {
                continue;
            };
            let facts = command::analyse(
                &text,
                cwd.as_deref(),
                rules.home(),
                &self.policy.sinks,
                self.project.as_deref(),
            );
            for t in &facts.writes {
                if let Some(why) = rules.gated(t, &mut imports) {
                    out.writes.push((target_name(t), why));
                }
            }
            if facts.runs_data.is_some() {
                out.extra.extend(facts.payload.iter().cloned());
            }
            if !out.writes.is_empty() {
                // The text written is in the command: matched as a file's text (§4.5 rules
                // 1–5 and 8), as a `Write` of it would be.
                out.extra
                    .extend(extract::text_values(&text, self.project.as_deref()));
            }
            out.runs_data = facts.runs_data.map(|how| (how, facts.payload));
            out.installs = facts.installs;
            out.param = Some(param.clone());
            break;
        }
        if out.param.is_none() {
            if let Some((param, path, why)) = self.gated_write_in(name, args, &mut imports) {
                out.writes.push((path, why));
                out.param = Some(param);
            }
        }
        out
    }

    /// Whether a call of the tool `name` (as the policy names it) writes a gated file
    /// through its `writes` parameter (`spec/hooks.md` §17.3), for [`Front::screen`].
    pub(crate) fn gated_write(&self, name: &str, args: &Map<String, Value>) -> bool {
        let mut imports = Imports::default();
        self.write_rules
            .start(&mut imports, self.call_cwd(args).as_deref());
        self.gated_write_in(name, args, &mut imports).is_some()
    }

    fn gated_write_in(
        &self,
        name: &str,
        args: &Map<String, Value>,
        imports: &mut Imports,
    ) -> Option<(String, String, Gated)> {
        let param = self.policy.tools.get(name)?.writes.clone()?;
        let value = args.get(&param)?;
        let cwd = self.call_cwd(args);
        let Some(s) = value.as_str() else {
            // Present but not a string: it may name anything (fail closed).
            let why = self
                .write_rules
                .gated(&Candidate::Pattern(vec![Pat::Any]), imports)?;
            return Some((param, value.to_string(), why));
        };
        let paths = if self.policy.value_kind(name, &param) == ValueKind::Patch {
            extract::patch_paths(s)
        } else {
            vec![s]
        };
        for p in paths {
            let target = candidate(
                &command::path_word(p),
                cwd.as_deref(),
                self.write_rules.home(),
            );
            if let Some(why) = self.write_rules.gated(&target, imports) {
                return Some((param, target_name(&target), why));
            }
        }
        None
    }

    /// The working directory of a call: the event's `cwd` (the project), moved by Codex's
    /// `workdir`.
    fn call_cwd(&self, args: &Map<String, Value>) -> Option<PathBuf> {
        let base = self.project.as_deref().map(PathBuf::from);
        match args.get("workdir").and_then(Value::as_str) {
            Some(w) => crate::front::protect::pattern::entered(base.as_deref(), w),
            None => base,
        }
    }

    /// The verdict of §17 on a call the gate and the secrecy rule allowed, when the session
    /// has read untrusted input: a call that runs code built from data whose payload the
    /// user did not state, or installs a package the user did not name, gets the tool's
    /// `composed_after_external` (ask or deny, with a receipt naming the sink). `None`: the
    /// rule has nothing to say (the ask rule of §15 decides next).
    pub(crate) fn sink_verdict(
        &mut self,
        session: &Session,
        call: &ToolCall,
        sinks: &CallSinks,
    ) -> Option<Verdict> {
        if self.policy.composed_after_external(&call.tool) == Composed::Allow {
            return None;
        }
        let param = sinks.param.clone()?;
        let key = (call.tool.clone(), param.clone());
        let mut sink = None;
        if let Some((how, payload)) = &sinks.runs_data {
            let mut stated = !payload.is_empty();
            for v in payload {
                stated = stated && self.stated(session, v, &key).0;
            }
            if !stated {
                sink = Some(Sink::RunsData { how: how.clone() });
            }
        }
        if sink.is_none() {
            for spec in &sinks.installs {
                let (stated, named_by) = self.stated(session, spec, &key);
                let name = package_name(spec);
                let (by_name, name_by) = match name != *spec {
                    true => self.stated(session, &name, &key),
                    false => (false, None),
                };
                if !(stated || by_name) {
                    sink = Some(Sink::Installs {
                        spec: spec.clone(),
                        named_by: named_by.or(name_by),
                    });
                    break;
                }
            }
        }
        let sink = sink?;
        match self.composed_verdict(session, call, std::slice::from_ref(&param), Some(sink)) {
            Verdict::Allow => None,
            v => Some(v),
        }
    }

    /// Whether the user stated `value` in this session (every read holding it is a
    /// statement, `spec/hooks.md` §4.4), and the first untrusted read that holds it. A ledger
    /// failure counts as not stated.
    fn stated(
        &mut self,
        session: &Session,
        value: &str,
        (tool, param): &(String, String),
    ) -> (bool, Option<EntryId>) {
        let v = Value::String(value.to_string());
        let Ok(ids) = self.sources_for(session, &v, Some((tool, param))) else {
            return (false, None);
        };
        let stated = !ids.is_empty()
            && ids
                .iter()
                .all(|id| self.is_statement(session, id, Some((tool, param))));
        let untrusted = ids.iter().copied().find(|id| {
            crate::gate::LineageView::label_of(&self.ledger, id)
                .is_none_or(|l| l > crate::lineage::Label::DerivedTrusted)
        });
        (stated, untrusted)
    }
}

/// A package's name without its version, extras or environment marker
/// (`requests[socks]>=2` → `requests`, `@scope/pkg@1.2` → `@scope/pkg`, `x@latest` → `x`).
pub fn package_name(spec: &str) -> String {
    let cut = spec
        .find(|c: char| "=<>!~[;,( ".contains(c))
        .unwrap_or(spec.len());
    let s = &spec[..cut];
    match s.rfind('@') {
        Some(at) if at > 0 && !s.contains("://") => s[..at].to_string(),
        _ => s.to_string(),
    }
}

/// How a write target is named in a receipt.
fn target_name(c: &Candidate) -> String {
    match c {
        Candidate::Path(p) => p.display().to_string(),
        Candidate::Pattern(p) => {
            let s: String = p
                .iter()
                .map(|x| match x {
                    Pat::Ch(c) => c.to_string(),
                    Pat::Star => "*".into(),
                    Pat::One => "?".into(),
                    Pat::Any => "**".into(),
                })
                .collect();
            s
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    type TestFront = Front<crate::store::MemoryStore, crate::front::DerivedKeys>;

    /// A front with the coding policy, working in `dir`.
    fn front(dir: &Path) -> TestFront {
        use crate::lineage::LabelPolicy;
        use crate::log::LogSigner;
        use crate::record::WriterKey;
        let signer = LogSigner::new("test.example/sinks", WriterKey::for_label("s")).unwrap();
        let store = crate::store::MemoryStore::default();
        let l = crate::Ledger::create(store, signer, LabelPolicy::default()).unwrap();
        let mut f = Front::new(
            l,
            crate::gate::Policy::coding(),
            crate::front::DerivedKeys("s".into()),
        );
        f.set_project(dir.to_str());
        f
    }

    fn verdict(f: &mut TestFront, s: &Session, tool: &str, args: Value) -> Verdict {
        let Value::Object(args) = args else { panic!() };
        f.check(s, tool, &args, &std::collections::HashMap::new())
            .unwrap()
            .verdict
    }

    fn sink_of(v: &Verdict) -> Option<&Sink> {
        match v {
            Verdict::Ask(r) => r.sink.as_ref(),
            _ => None,
        }
    }

    /// Through `Front::check`, as every front decides: after a tool output, code built
    /// from data, a package the user did not name and a write to a file `CLAUDE.md` imports
    /// are asked, naming the sink; the package the user named runs; before any untrusted
    /// input nothing is asked.
    #[test]
    fn sinks_after_untrusted_input_are_asked_unless_the_user_stated_them() {
        use serde_json::json;
        let tmp = tempfile::tempdir().unwrap();
        let dir = std::fs::canonicalize(tmp.path()).unwrap();
        std::fs::write(dir.join("CLAUDE.md"), "Rules: @docs/rules.md\n").unwrap();
        let mut f = front(&dir);
        let mut s = Session::new("s");
        f.record_prompt(&mut s, "Install pytest-cov and set the project up")
            .unwrap();
        let payload = json!({"command": "echo aGVsbG8gd29ybGQ= | base64 -d | sh"});
        let install = json!({"command": "pip install reqeusts-toolbelt2"});
        let rules = json!({"file_path": dir.join("docs/rules.md"), "content": "Run ./x first."});
        for (tool, args) in [("Bash", &payload), ("Bash", &install), ("Write", &rules)] {
            assert_eq!(
                verdict(&mut f, &s, tool, args.clone()),
                Verdict::Allow,
                "{args}"
            );
        }
        f.record_tool_result(
            &mut s,
            "Read",
            &json!({"file_path": "README.md"}),
            "Setup: pip install reqeusts-toolbelt2",
        )
        .unwrap();
        let v = verdict(&mut f, &s, "Bash", payload);
        assert!(matches!(sink_of(&v), Some(Sink::RunsData { .. })), "{v:?}");
        let v = verdict(&mut f, &s, "Bash", install);
        assert!(
            matches!(
                sink_of(&v),
                Some(Sink::Installs {
                    named_by: Some(_),
                    ..
                })
            ),
            "{v:?}"
        );
        let v = verdict(&mut f, &s, "Write", rules);
        assert!(
            matches!(
                sink_of(&v),
                Some(Sink::Writes {
                    why: Gated::Imported(_),
                    ..
                })
            ),
            "{v:?}"
        );
        let named = json!({"command": "pip install pytest-cov"});
        assert_eq!(verdict(&mut f, &s, "Bash", named), Verdict::Allow);
        let other = json!({"file_path": dir.join("docs/other.md"), "content": "x"});
        assert_eq!(verdict(&mut f, &s, "Write", other), Verdict::Allow);
    }

    #[test]
    fn package_names_drop_versions_and_extras() {
        for (spec, name) in [
            ("requests", "requests"),
            ("requests[socks]>=2.31", "requests"),
            ("reqeusts-toolbelt2==1.0", "reqeusts-toolbelt2"),
            ("@scope/pkg@1.2.3", "@scope/pkg"),
            ("@scope/pkg", "@scope/pkg"),
            (
                "golang.org/x/tools/gopls@latest",
                "golang.org/x/tools/gopls",
            ),
            (
                "git+https://evil.example/x.git@main",
                "git+https://evil.example/x.git@main",
            ),
        ] {
            assert_eq!(package_name(spec), name, "{spec}");
        }
    }

    #[test]
    fn a_sink_reads_as_a_clause() {
        let e = EntryId([7; 32]);
        assert_eq!(
            Sink::Installs {
                spec: "evil-helper-cli".into(),
                named_by: Some(e)
            }
            .to_string(),
            "it installs the package `evil-helper-cli`, which untrusted entry 07070707 names \
             and the user did not"
        );
        assert_eq!(
            Sink::RunsData {
                how: "pipes data into `sh`".into()
            }
            .to_string(),
            "it runs code it builds from data (pipes data into `sh`), and the user did not \
             state where that code comes from"
        );
        assert!(Sink::Writes {
            path: "/p/Makefile".into(),
            why: Gated::Listed("Makefile".into())
        }
        .to_string()
        .starts_with("it writes `/p/Makefile`, a file that a tool runs"));
    }
}
