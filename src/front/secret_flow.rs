//! The secrecy rule applied to a session (`spec/hooks.md` §16): which of the session's reads
//! descend from a secret, whether it has read untrusted input, and the flow rule (§16.3) that
//! refuses a call sending a secret to a destination neither the policy nor the user opened.

use super::{matching, secret_values, secrets, Front, Keys, Refusal, Session};
use crate::gate::extract;
use crate::record::EntryId;
use crate::store::Store;
use serde_json::Value;
use std::collections::HashSet;
use std::path::Path;

impl<S: Store, K: Keys> Front<S, K> {
    /// The policy's secrecy rule for the home directory of this process (`$HOME` when the
    /// front was made).
    pub(super) fn secret_rules(&self) -> std::sync::Arc<secrets::SecretRules> {
        std::sync::Arc::clone(&self.secret_rules)
    }

    /// The flow rule of `spec/hooks.md` §16.3 for a call the gate allowed: an egress call
    /// with a destination neither the policy nor a statement of the user opened is refused
    /// when it reads a secret itself, or when the session's reads descend from one. A
    /// destination only the user's statement opened (§16.6) is refused, once the session has
    /// read untrusted input, for a secret the call reads itself or whose value one of its
    /// arguments carries (whenever the secret was read: the untrusted text may have asked
    /// for it to be sent before or after). A call the policy does not gate
    /// (`gated` false: a fetch, whose only payload is where it goes) is let through to a
    /// destination nobody opened when every destination parameter's value is copied whole from
    /// a read of the session and no argument carries a secret's value: it then sends nothing
    /// the page's author did not write.
    pub(super) fn secret_flow(
        &mut self,
        session: &Session,
        tool: &str,
        args: &serde_json::Map<String, Value>,
        gated: bool,
    ) -> Option<Refusal> {
        if self.policy.secrets.is_empty() {
            return None;
        }
        let cwd = self.project.clone();
        let cwd = cwd.as_deref().map(Path::new);
        let rules = self.secret_rules();
        let call = rules.call_reading(tool, args, cwd);
        let Some(egress) = call.egress else {
            let mut strangers = call.strangers;
            // A tool no policy classifies may send its arguments anywhere (most MCP servers
            // call a remote service): handed a secret's value, it is refused as a program not
            // known to stay local is (attack review 53: after a Read of `.env`, an unknown
            // `create_page` or `puppeteer_navigate` carrying the token was only asked).
            if strangers.is_empty() && !self.policy.classifies(tool) {
                strangers.push(secrets::Egress {
                    via: format!("{tool} (a tool no policy classifies)"),
                    destinations: Vec::new(),
                });
            }
            let first = strangers.first().cloned()?;
            if let Some(r) = self.handed_to_a_stranger(session, tool, args, strangers) {
                return Some(r);
            }
            // A file it names that holds a value of a secret file (a copy made in an earlier
            // call or session, §16.2 "Copies") is handed to the program as the secret is
            // (attack review 45: `cp ~/.aws/credentials notes.txt`, then `mytool notes.txt`).
            return Some(Refusal::Secret {
                tool: tool.to_string(),
                secret: rules.copied_secret(tool, args, cwd)?,
                entry: None,
                via: first.via,
                destination: "an unnamed destination".to_string(),
                after_untrusted: false,
                carried: None,
            });
        };
        let mut itself = call.reads;
        // Nothing secret to send: no destination needs judging (every branch below refuses
        // only for a secret the call reads or the session read) — unless a file it sends holds
        // a secret's value (a copy made earlier, in any session: §16.2, "Copies").
        if itself.is_none() && self.secret_reads(session, false).is_empty() {
            itself = Some(rules.copied_secret(tool, args, cwd)?);
        }
        let mut closed: Vec<String> = egress
            .destinations
            .iter()
            .filter(|d| !rules.is_open(d))
            .cloned()
            .collect();
        // A destination the user stated in this session is opened by that statement, for
        // the secrets it may open (below).
        let stated: Vec<String> = closed
            .iter()
            .filter(|d| self.stated_by_user(session, d))
            .cloned()
            .collect();
        closed.retain(|d| !stated.contains(d));
        if egress.destinations.is_empty() {
            closed.push(super::verdict::UNNAMED_DESTINATION.to_string());
        }
        let refusal = |secret: String,
                       entry: Option<EntryId>,
                       destination: String,
                       after_untrusted: bool,
                       carried: Option<secret_values::Carried>| {
            Some(Refusal::Secret {
                tool: tool.to_string(),
                secret,
                entry,
                via: egress.via.clone(),
                destination,
                after_untrusted,
                carried,
            })
        };
        if let Some(destination) = closed.into_iter().next() {
            return match itself {
                Some(s) => refusal(s, None, destination, false, None),
                None if !gated && self.copied_destination(session, tool, args) => {
                    let reads = self.secret_reads(session, true);
                    let carrier = reads
                        .into_iter()
                        .find_map(|r| self.carried_value(&r, args).map(|c| (r, c)))?;
                    let (r, c) = carrier;
                    refusal(r.what, Some(r.read), destination, false, Some(c))
                }
                None => {
                    let first = self.secret_reads(session, false).into_iter().next()?;
                    let carried = self.carried_value(&first, args);
                    refusal(first.what, Some(first.read), destination, false, carried)
                }
            };
        }
        // Every destination is opened; those only the user opened open nothing for a secret
        // that untrusted input may have asked for.
        let destination = stated.into_iter().next()?;
        if let Some(s) = itself {
            return if self.read_untrusted(session) {
                refusal(s, None, destination, true, None)
            } else {
                None
            };
        }
        // Untrusted input read before this call may have asked for it, whenever the secret
        // itself was read: the worst source of the decision to send decides.
        if !self.read_untrusted(session) {
            return None;
        }
        for read in self.secret_reads(session, true) {
            if let Some(c) = self.carried_value(&read, args) {
                return refusal(read.what, Some(read.read), destination, true, Some(c));
            }
        }
        None
    }

    /// A call that sends through no egress command but runs a program not known to keep data
    /// on the machine, and hands it a value of a secret the session read, as written or in one
    /// of §16.6's encodings (the agent retyped what it read): refused, as the same value in an
    /// egress command's arguments is (§16.2, "Programs not known to stay local").
    fn handed_to_a_stranger(
        &mut self,
        session: &Session,
        tool: &str,
        args: &serde_json::Map<String, Value>,
        strangers: Vec<secrets::Egress>,
    ) -> Option<Refusal> {
        let stranger = strangers.into_iter().next()?;
        let (read, carried) = self
            .secret_reads(session, true)
            .into_iter()
            .find_map(|r| self.carried_known(&r, args).map(|c| (r, c)))?;
        Some(Refusal::Secret {
            tool: tool.to_string(),
            secret: read.what,
            entry: Some(read.read),
            via: stranger.via,
            destination: super::verdict::UNNAMED_DESTINATION.to_string(),
            after_untrusted: false,
            carried: Some(carried),
        })
    }

    /// Whether every destination parameter of the egress tool `tool` (`secrets.egress_tools`)
    /// is present and each of its strings is copied whole from a read of the session (a
    /// shell command's destinations are never: what a command sends is not in its words).
    fn copied_destination(
        &mut self,
        session: &Session,
        tool: &str,
        args: &serde_json::Map<String, Value>,
    ) -> bool {
        let names = self
            .policy
            .secrets
            .egress_tools
            .iter()
            .find(|(t, _)| {
                **t == tool || crate::gate::principal_stem(t) == crate::gate::principal_stem(tool)
            })
            .map(|(_, n)| n.clone());
        let Some(names) = names.filter(|n| !n.is_empty()) else {
            return false;
        };
        for n in &names {
            let Some(v) = args.get(n) else {
                return false;
            };
            let mut strings = Vec::new();
            extract::string_leaves(v, &mut strings);
            if strings.is_empty() {
                return false;
            }
            for s in strings {
                let v = Value::String(s.to_string());
                match self.sources_for(session, &v, None) {
                    Ok(ids) if !ids.is_empty() => {}
                    _ => return false,
                }
            }
        }
        true
    }

    /// Where `args` carry a value of the secret `read` (its session read's text, and the
    /// source's); an entry whose text cannot be read carries every value (fail closed:
    /// the first argument, encoding `"unknown"`).
    fn carried_value(
        &mut self,
        read: &SecretRead,
        args: &serde_json::Map<String, Value>,
    ) -> Option<secret_values::Carried> {
        self.carried(read, args, true)
    }

    /// [`Front::carried_value`] for the rule on programs not known to keep data local, which
    /// looks for the values the agent saw (§16.2): those of the session read's text only, and a
    /// text that cannot be read (unseen history, a content deleted) carries nothing, so that a
    /// session whose start the hooks did not see can still build and test.
    fn carried_known(
        &mut self,
        read: &SecretRead,
        args: &serde_json::Map<String, Value>,
    ) -> Option<secret_values::Carried> {
        self.carried(read, args, false)
    }

    fn carried(
        &mut self,
        read: &SecretRead,
        args: &serde_json::Map<String, Value>,
        unknown_carries: bool,
    ) -> Option<secret_values::Carried> {
        use crate::gate::OriginView;
        let mut tokens = std::collections::BTreeSet::new();
        // For programs not known to stay local, the values the agent saw: the session read's
        // text only (a secret's source may be the call that read it, whose text is the command
        // and not the secret: a second run of the same command would carry it).
        let ids = match unknown_carries {
            true => vec![read.read, read.source],
            false => vec![read.read],
        };
        for id in ids {
            // Unseen history (§3.1) carries every value, as a text that cannot be read does.
            let text = match self.is_unseen_marker(&id) {
                true => None,
                false => self.ledger.origin_node(&id).text,
            };
            match text {
                Some(t) => tokens.extend(secret_values::specific_tokens(&t)),
                None if !unknown_carries => {}
                None => {
                    return args.keys().next().map(|a| secret_values::Carried {
                        argument: a.clone(),
                        encoding: "unknown",
                    })
                }
            }
        }
        secret_values::carried(&tokens, args)
    }

    /// Whether the session has read untrusted input (or lost a read it could not record): a
    /// read labelled worse than Derived-Trusted, or not labelled by this handle, that is not a
    /// secret only the user writes (a secret file, a secret tool not in `written_by_others`:
    /// reading one's own credentials is not an instruction from someone else).
    fn read_untrusted(&mut self, session: &Session) -> bool {
        if session.unrecorded > 0 {
            return true;
        }
        !self.reads_all_trusted(session, |f, r| f.is_private_secret(r))
    }

    /// Whether `id` is a result of a secret only the user writes: a secret tool's result (not
    /// `written_by_others`), or the result of a call that reads a secret file.
    fn is_private_secret(&mut self, id: &EntryId) -> bool {
        let Some(node) = self.secret_node(id) else {
            return false;
        };
        if let Some(src) = &node.source {
            return src.private;
        }
        if !node.tool_result {
            return false;
        }
        let Some(call) = node.parents.first().copied() else {
            return false;
        };
        self.secret_node(&call)
            .and_then(|c| c.source.as_ref())
            .is_some_and(|s| s.private)
    }

    /// Whether a statement of the user among the session's reads holds `dest`
    /// (`spec/hooks.md` §4.4).
    fn stated_by_user(&self, session: &Session, dest: &str) -> bool {
        let needle = matching::Needle::new(&Value::String(dest.to_string()));
        // The text first: only a read that holds the destination is looked up as a statement.
        session
            .matching(&self.haystacks, &needle)
            .iter()
            .any(|id| self.haystacks.contains_key(id) && self.is_statement(session, id, None))
    }

    /// The secrecy rule's judgement of the verified entry `id` (remembered: entries are
    /// immutable); `None` when it cannot be verified (then it is never remembered).
    fn secret_node(&mut self, id: &EntryId) -> Option<&SecretNode> {
        use crate::gate::OriginView;
        self.verified_here();
        if self.secret_nodes_cwd != self.project {
            self.secret_nodes.clear();
            self.secret_nodes_cwd = self.project.clone();
        }
        if !self.secret_nodes.contains_key(id) {
            let node = self.ledger.origin_node(id);
            let (Some((role, name)), Some(text)) = (&node.writer, &node.text) else {
                return None;
            };
            let cwd = self.project.as_deref().map(Path::new);
            let source = self.secret_rules().source_of(*role, name, text, cwd);
            let tool_result = *role == crate::record::Role::Tool;
            self.secret_nodes.insert(
                *id,
                SecretNode {
                    source,
                    tool_result,
                    parents: node.parents,
                },
            );
        }
        self.secret_nodes.get(id)
    }

    /// The session's reads whose lineage holds a secret source, every recorded edge followed
    /// (§16.1): a result of a secret tool, or a call entry of the agent whose signed content
    /// reads a secret; an entry that cannot be verified counts as one (fail closed). The first
    /// one found only, unless `all`.
    ///
    /// One depth-first walk over the reads in order, each entry visited once: a read whose
    /// lineage reaches a source already reached through an earlier read is not listed again.
    /// The walk over `reads[..n]` is kept in the session's memo ([`Session::with_judged`])
    /// and continued from the reads after it, which gives what a walk from the start gives
    /// (the walk finishes each read before the next); it is not kept when it met an entry
    /// that cannot be verified (judged again, as before), nor when the project changed.
    fn secret_reads(&mut self, session: &Session, all: bool) -> Vec<SecretRead> {
        let project = self.project.clone();
        let mut walk = self.kept_secret_walk(session, &project).unwrap_or_default();
        let reads = &session.reads();
        for &r in &reads[walk.n.min(reads.len())..] {
            if !all && !walk.found.is_empty() {
                break;
            }
            self.walk_read(&mut walk, r);
            walk.n += 1;
        }
        let out = match all {
            true => walk.found.clone(),
            false => walk.found.iter().take(1).cloned().collect(),
        };
        if !walk.unverifiable {
            self.keep_secret_walk(session, project, walk);
        }
        out
    }

    /// Walks the lineage of read `read` from it, over the entries `walk` has not visited.
    fn walk_read(&mut self, walk: &mut SecretWalk, read: EntryId) {
        let mut stack: Vec<EntryId> = vec![read];
        while let Some(id) = stack.pop() {
            if !walk.seen.insert(id) {
                continue;
            }
            let Some(node) = self.secret_node(&id) else {
                walk.unverifiable = true;
                walk.found.push(SecretRead {
                    read,
                    source: id,
                    what: format!("entry {} that cannot be verified", id.short()),
                });
                continue;
            };
            match &node.source {
                Some(src) => walk.found.push(SecretRead {
                    read,
                    source: id,
                    what: src.what.clone(),
                }),
                None => stack.extend(node.parents.iter().rev().copied()),
            }
        }
    }
}

/// A walk of [`Front::secret_reads`] over a session's first `n` reads.
#[derive(Clone, Default)]
pub(super) struct SecretWalk {
    /// How many reads were walked.
    n: usize,
    /// Every entry visited.
    seen: HashSet<EntryId>,
    /// The reads found, in the walk's order.
    found: Vec<SecretRead>,
    /// An entry that cannot be verified was met (then the walk is not kept).
    unverifiable: bool,
}

impl SecretWalk {
    /// How many reads were walked.
    pub(super) fn n(&self) -> usize {
        self.n
    }
}

/// What the secrecy rule remembers of an entry it judged (entries are immutable).
pub(super) struct SecretNode {
    /// The secret source it is, if any.
    source: Option<secrets::SecretSource>,
    /// Written by a tool principal (a tool's result).
    tool_result: bool,
    parents: Vec<EntryId>,
}

/// A read of a session whose lineage holds a secret (`spec/hooks.md` §16.1).
#[derive(Clone)]
struct SecretRead {
    /// The session's read.
    read: EntryId,
    /// The secret source in its lineage (the read itself, or an ancestor).
    source: EntryId,
    /// What the secret is (a file, a tool's result, an unverifiable entry).
    what: String,
}
