//! `memlineage mcp install`: rewrites a host's MCP configuration so that a server (or every
//! stdio server) runs behind the gateway, `memlineage mcp proxy` (`spec/mcp.md` §6.6), with
//! absolute paths, since hosts start servers with a `PATH` of their own.

use crate::hook_install::Json;
use crate::mcp_proxy::DEFAULT_DEADLINE_MS;
use crate::Res;
use clap::ValueEnum;
use indexmap::IndexMap;
use memlineage::front::mcp::gateway::{check_server_name, MAX_SERVER_NAME};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The MCP hosts whose configuration `mcp install` and `mcp doctor` know.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Host {
    /// Claude Desktop: `claude_desktop_config.json`, `mcpServers`.
    ClaudeDesktop,
    /// Cursor: `~/.cursor/mcp.json` (with `--dir`, the project's `.cursor/mcp.json`),
    /// `mcpServers`.
    Cursor,
    /// VS Code: the workspace's `.vscode/mcp.json`, `servers`.
    Vscode,
    /// Windsurf: `~/.codeium/windsurf/mcp_config.json`, `mcpServers`.
    Windsurf,
}

impl Host {
    /// The member of the configuration that holds the servers.
    pub fn servers_key(self) -> &'static str {
        match self {
            Host::Vscode => "servers",
            _ => "mcpServers",
        }
    }

    /// The configuration file: `dir` is the project directory (`--dir`), for the hosts that
    /// have one.
    ///
    /// # Errors
    /// When neither `HOME` (nor `APPDATA` on Windows) is set and the file is under it.
    pub fn config(self, dir: Option<&Path>) -> Res<PathBuf> {
        let home = || -> Res<PathBuf> {
            std::env::var_os("HOME")
                .map(PathBuf::from)
                .ok_or_else(|| "HOME is not set: give the file with --host-config".into())
        };
        Ok(match self {
            Host::ClaudeDesktop if cfg!(target_os = "macos") => {
                home()?.join("Library/Application Support/Claude/claude_desktop_config.json")
            }
            Host::ClaudeDesktop if cfg!(windows) => std::env::var_os("APPDATA")
                .map(PathBuf::from)
                .ok_or("APPDATA is not set: give the file with --host-config")?
                .join("Claude/claude_desktop_config.json"),
            Host::ClaudeDesktop => std::env::var_os("XDG_CONFIG_HOME")
                .map(PathBuf::from)
                .map_or_else(|| home().map(|h| h.join(".config")), Ok)?
                .join("Claude/claude_desktop_config.json"),
            Host::Cursor => match dir {
                Some(d) => d.join(".cursor/mcp.json"),
                None => home()?.join(".cursor/mcp.json"),
            },
            Host::Vscode => dir
                .map_or_else(std::env::current_dir, |d| Ok(d.to_path_buf()))?
                .join(".vscode/mcp.json"),
            Host::Windsurf => home()?.join(".codeium/windsurf/mcp_config.json"),
        })
    }

    /// The host's name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Host::ClaudeDesktop => "claude-desktop",
            Host::Cursor => "cursor",
            Host::Vscode => "vscode",
            Host::Windsurf => "windsurf",
        }
    }
}

/// Where a host's configuration is.
#[derive(clap::Args)]
pub struct HostArgs {
    /// The host whose MCP configuration to rewrite.
    #[arg(long, value_enum)]
    pub host: Host,
    /// The project directory (Cursor's and VS Code's project configuration).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// The configuration file, instead of the host's usual one.
    #[arg(long)]
    pub host_config: Option<PathBuf>,
}

impl HostArgs {
    /// The configuration file.
    pub fn path(&self) -> Res<PathBuf> {
        match &self.host_config {
            Some(p) => Ok(std::path::absolute(p)?),
            None => self.host.config(self.dir.as_deref()),
        }
    }
}

/// `memlineage mcp install` arguments.
#[derive(clap::Args)]
pub struct InstallArgs {
    #[command(flatten)]
    host: HostArgs,
    /// The ledger the gateway records into (made by `memlineage init`).
    #[arg(long)]
    ledger: PathBuf,
    /// The server (its name in the host's configuration) to put behind the gateway; with a
    /// command after `--`, it is added or replaced first.
    #[arg(long, required_unless_present = "all", conflicts_with = "all")]
    server: Option<String>,
    /// Put every stdio server of the configuration behind the gateway.
    #[arg(long)]
    all: bool,
    /// Gate policy (default: the coding-agent policy, as for the hooks).
    #[arg(long)]
    policy: Option<PathBuf>,
    /// The state directory (default: the hooks' default for this ledger).
    #[arg(long)]
    state: Option<PathBuf>,
    /// The session shared with the hooks (default: `mcp-gateway/<host>`, one per host).
    #[arg(long)]
    session: Option<String>,
    /// The deadline of a request, in milliseconds.
    #[arg(long, default_value_t = DEFAULT_DEADLINE_MS)]
    deadline_ms: u64,
    /// The memlineage binary the host runs (default: this executable).
    #[arg(long)]
    binary: Option<PathBuf>,
    /// The server's command and arguments, after `--`.
    #[arg(last = true, conflicts_with = "all")]
    command: Vec<String>,
}

/// What `install` writes into a server's entry besides its upstream.
struct Gateway {
    binary: String,
    options: Vec<String>,
}

/// Runs `memlineage mcp install`.
pub fn install(a: &InstallArgs) -> Res<ExitCode> {
    crate::open::check_ledger_file(&a.ledger)?;
    let binary = utf8(&std::path::absolute(match &a.binary {
        Some(b) => b.clone(),
        None => std::env::current_exe()?,
    })?)?;
    let state = crate::hook_install::pin(&a.ledger, a.state.as_deref())?;
    let mut options = vec![utf8(&std::path::absolute(&a.ledger)?)?];
    options.extend(["--state".into(), utf8(&state.0)?]);
    if let Some(p) = &a.policy {
        if !p.is_file() {
            return Err(format!("no policy file {}", p.display()).into());
        }
        options.extend(["--policy".into(), utf8(&std::path::absolute(p)?)?]);
    }
    // One session per host: its conversations outlive its processes (`spec/mcp.md` §6.4).
    let session =
        (a.session.clone()).unwrap_or_else(|| format!("mcp-gateway/{}", a.host.host.name()));
    options.extend(["--session".into(), session]);
    if a.deadline_ms != DEFAULT_DEADLINE_MS {
        options.extend(["--deadline-ms".into(), a.deadline_ms.to_string()]);
    }
    let gateway = Gateway { binary, options };
    let path = a.host.path()?;
    let existing = crate::hook_install::read_existing(&path)?;
    let command = (!a.command.is_empty()).then_some(a.command.as_slice());
    let (text, wrapped) = rewrite(
        a.host.host,
        existing.as_deref(),
        a.server.as_deref(),
        command,
        &gateway,
    )
    .map_err(|e| format!("{}: {e}: left untouched", path.display()))?;
    crate::hook_install::write_if_changed(&path, existing.as_deref(), &text)?;
    for (name, upstream) in &wrapped {
        crate::io::say!(
            "server {name}: {} mcp proxy … -- {upstream}",
            gateway.binary
        );
    }
    crate::io::say!(
        "restart {} to load it; check with: memlineage mcp doctor --host {}{}",
        a.host.host.name(),
        a.host.host.name(),
        a.host
            .host_config
            .as_ref()
            .map(|p| format!(" --host-config {}", p.display()))
            .unwrap_or_default()
    );
    Ok(ExitCode::SUCCESS)
}

/// The configuration text after putting `server` (or every stdio server, with `None`) behind
/// the gateway, and the servers wrapped with their upstream commands. With `command`, the
/// server's entry is set to run it first. An entry already behind the gateway is rewrapped
/// around its upstream, so that a second run changes nothing.
///
/// # Errors
/// A configuration that is not a JSON object or whose servers are not an object; a named
/// server that is not there (without `command`) or is not a stdio server; an upstream command
/// not found in `PATH`.
fn rewrite(
    host: Host,
    existing: Option<&str>,
    server: Option<&str>,
    command: Option<&[String]>,
    gateway: &Gateway,
) -> Res<(String, Vec<(String, String)>)> {
    let mut root = match existing.map(str::trim) {
        None | Some("") => IndexMap::new(),
        Some(text) => {
            serde_json::from_str::<serde_json::Value>(text)
                .map_err(|e| format!("not JSON ({e}; comments are not supported)"))?;
            match serde_json::from_str::<Json>(text)? {
                Json::Object(o) => o,
                _ => return Err("the root is not a JSON object".into()),
            }
        }
    };
    let key = host.servers_key();
    let Json::Object(servers) = root
        .entry(key.to_string())
        .or_insert_with(|| Json::Object(IndexMap::new()))
    else {
        return Err(format!("`{key}` is not an object").into());
    };
    if let (Some(name), Some(cmd)) = (server, command) {
        let mut entry = match servers.shift_remove(name) {
            Some(Json::Object(e)) => e,
            _ => IndexMap::new(),
        };
        entry.shift_remove("url");
        if host == Host::Vscode {
            entry.insert("type".into(), Json::String("stdio".into()));
        }
        entry.insert("command".into(), Json::String(cmd[0].clone()));
        let args = cmd[1..].iter().cloned().map(Json::String).collect();
        entry.insert("args".into(), Json::Array(args));
        servers.insert(name.to_string(), Json::Object(entry));
    }
    let names: Vec<String> = match server {
        Some(n) if !servers.contains_key(n) => {
            return Err(format!(
                "no server {n:?} in `{key}` (give its command after `--` to add it)"
            )
            .into())
        }
        Some(n) => vec![n.to_string()],
        None => servers
            .iter()
            .filter(|(_, e)| matches!(e, Json::Object(o) if upstream_of(o).is_ok()))
            .map(|(n, _)| n.clone())
            .collect(),
    };
    let mut wrapped = Vec::new();
    for name in names {
        let Some(Json::Object(entry)) = servers.get_mut(&name) else {
            return Err(format!("server {name:?} is not an object").into());
        };
        let upstream = upstream_of(entry).map_err(|e| format!("server {name:?}: {e}"))?;
        let mut proxy = vec!["mcp".to_string(), "proxy".to_string()];
        proxy.extend(gateway.options.iter().cloned());
        proxy.extend(["--server".into(), gateway_name(&name)]);
        let shown = match upstream {
            Upstream::Command(program, args) => {
                let program = resolve(&program)?;
                let shown = std::iter::once(program.as_str())
                    .chain(args.iter().map(String::as_str))
                    .collect::<Vec<_>>()
                    .join(" ");
                proxy.push("--".into());
                proxy.push(program);
                proxy.extend(args);
                shown
            }
            Upstream::Http { url, headers } => {
                // The host now starts the gateway (stdio), which speaks HTTP to the server
                // (`spec/mcp.md` §6.11).
                for key in ["url", "serverUrl", "headers"] {
                    entry.shift_remove(key);
                }
                if host == Host::Vscode {
                    entry.insert("type".into(), Json::String("stdio".into()));
                }
                proxy.extend(["--url".into(), url.clone()]);
                // Headers (a bearer token) go to the gateway's environment, which only its user
                // can read, not to its arguments, which every user can.
                if !headers.is_empty() {
                    let env = entry
                        .entry("env".to_string())
                        .or_insert_with(|| Json::Object(IndexMap::new()));
                    let Json::Object(env) = env else {
                        return Err(format!("server {name:?}: `env` is not an object").into());
                    };
                    env.insert(
                        crate::mcp_proxy::HEADERS_ENV.into(),
                        Json::String(headers.join("\n")),
                    );
                }
                url
            }
        };
        entry.insert("command".into(), Json::String(gateway.binary.clone()));
        entry.insert(
            "args".into(),
            Json::Array(proxy.into_iter().map(Json::String).collect()),
        );
        wrapped.push((name, shown));
    }
    Ok((
        serde_json::to_string_pretty(&Json::Object(root))? + "\n",
        wrapped,
    ))
}

/// The server behind a host's entry.
#[derive(Debug, PartialEq, Eq)]
pub enum Upstream {
    /// A stdio server: its command and arguments.
    Command(String, Vec<String>),
    /// A Streamable HTTP server: its endpoint and headers (`Name: value`).
    Http { url: String, headers: Vec<String> },
}

/// A server entry's upstream: its own command and arguments, or its `url` (`serverUrl` in
/// Windsurf) and `headers`; for an entry already behind the gateway, what follows the gateway's
/// `--`, or its `--url` and `--header`s.
///
/// # Errors
/// An entry with neither a string `command` nor a string `url`, a server of the older SSE
/// transport (`"type": "sse"`: the gateway speaks Streamable HTTP), headers that are not
/// strings, or arguments that are not strings.
pub fn upstream_of(entry: &IndexMap<String, Json>) -> Res<Upstream> {
    if let Some(url) = entry.get("url").or_else(|| entry.get("serverUrl")) {
        let Json::String(url) = url else {
            return Err("`url` is not a string".into());
        };
        if matches!(entry.get("type"), Some(Json::String(t)) if t == "sse") {
            return Err(
                "a server of the older SSE transport (`\"type\": \"sse\"`): the gateway speaks \
                 Streamable HTTP"
                    .into(),
            );
        }
        let headers = match entry.get("headers") {
            None => Vec::new(),
            Some(Json::Object(h)) => h
                .iter()
                .map(|(k, v)| match v {
                    Json::String(v) => Ok(format!("{k}: {v}")),
                    _ => Err("a header that is not a string"),
                })
                .collect::<Result<_, _>>()?,
            Some(_) => return Err("`headers` is not an object".into()),
        };
        return Ok(Upstream::Http {
            url: url.clone(),
            headers,
        });
    }
    let Some(Json::String(command)) = entry.get("command") else {
        return Err("no `command` or `url`".into());
    };
    let args = match entry.get("args") {
        None => Vec::new(),
        Some(Json::Array(a)) => a
            .iter()
            .map(|v| match v {
                Json::String(s) => Ok(s.clone()),
                _ => Err("an argument that is not a string"),
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err("`args` is not an array".into()),
    };
    if let Some(rest) = gateway_upstream(&args) {
        return Ok(rest);
    }
    Ok(Upstream::Command(command.clone(), args))
}

/// For the arguments of an entry that runs `memlineage mcp proxy … -- UPSTREAM…`: UPSTREAM;
/// for one that runs `memlineage mcp proxy … --url URL [--header H]…`: URL and the headers.
pub fn gateway_upstream(args: &[String]) -> Option<Upstream> {
    if args.first().map(String::as_str) != Some("mcp")
        || args.get(1).map(String::as_str) != Some("proxy")
    {
        return None;
    }
    if let Some(at) = args.iter().position(|a| a == "--") {
        let (program, rest) = args.get(at + 1..)?.split_first()?;
        return Some(Upstream::Command(program.clone(), rest.to_vec()));
    }
    let value = |flag: &str| {
        args.windows(2)
            .filter(|w| w[0] == flag)
            .map(|w| w[1].clone())
            .collect::<Vec<_>>()
    };
    let url = value("--url").into_iter().next()?;
    Some(Upstream::Http {
        url,
        headers: value("--header"),
    })
}

/// The gateway's `--server` for a host's server name: the characters `mcp__<server>__<tool>`
/// allows, `_` for the others, at most [`MAX_SERVER_NAME`] bytes.
pub fn gateway_name(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        let c = if c.is_ascii_alphanumeric() || c == '-' {
            c
        } else {
            '_'
        };
        if !(c == '_' && out.ends_with('_')) {
            out.push(c);
        }
    }
    out.truncate(MAX_SERVER_NAME);
    let named = out.chars().any(|c| c.is_ascii_alphanumeric());
    if !named || check_server_name(&out).is_err() {
        return "server".into();
    }
    out
}

/// `program` as an absolute path: as given when it names a directory, else found in `PATH`.
fn resolve(program: &str) -> Res<String> {
    if program.contains('/') {
        return utf8(&std::path::absolute(program)?);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        let candidate = dir.join(program);
        if is_executable(&candidate) {
            return utf8(&candidate);
        }
    }
    Err(format!(
        "{program} is not in PATH: give its full path (hosts start servers with a PATH of \
         their own)"
    )
    .into())
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

fn utf8(p: &Path) -> Res<String> {
    Ok(p.to_str()
        .ok_or_else(|| format!("{}: not UTF-8", p.display()))?
        .to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gateway() -> Gateway {
        Gateway {
            binary: "/opt/memlineage".into(),
            options: vec!["/l.db".into(), "--state".into(), "/st".into()],
        }
    }

    #[test]
    fn a_server_is_wrapped_once_and_its_neighbours_kept_in_order() {
        let before = r#"{"other": 1, "mcpServers": {"web": {"url": "https://x"},
            "fs": {"command": "/usr/bin/env", "args": ["node", "fs.js"], "env": {"A": "b"}}}}"#;
        let (text, wrapped) = rewrite(
            Host::ClaudeDesktop,
            Some(before),
            Some("fs"),
            None,
            &gateway(),
        )
        .unwrap();
        assert_eq!(
            wrapped,
            [("fs".to_string(), "/usr/bin/env node fs.js".to_string())]
        );
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["mcpServers"]["fs"]["command"], "/opt/memlineage");
        assert_eq!(
            v["mcpServers"]["fs"]["args"],
            serde_json::json!([
                "mcp",
                "proxy",
                "/l.db",
                "--state",
                "/st",
                "--server",
                "fs",
                "--",
                "/usr/bin/env",
                "node",
                "fs.js"
            ])
        );
        assert_eq!(v["mcpServers"]["fs"]["env"]["A"], "b");
        assert!(text.find("\"other\"") < text.find("\"mcpServers\""));
        // Again: nothing changes.
        let (again, _) = rewrite(
            Host::ClaudeDesktop,
            Some(&text),
            Some("fs"),
            None,
            &gateway(),
        )
        .unwrap();
        assert_eq!(again, text);
        // `--all` puts the HTTP server behind the gateway too (spec/mcp.md §6.11).
        let (all, wrapped) =
            rewrite(Host::ClaudeDesktop, Some(before), None, None, &gateway()).unwrap();
        assert_eq!(wrapped.len(), 2);
        let v: serde_json::Value = serde_json::from_str(&all).unwrap();
        let web = &v["mcpServers"]["web"];
        assert!(web.get("url").is_none(), "{web}");
        assert_eq!(web["command"], "/opt/memlineage");
        assert_eq!(web["args"][6], "web");
        assert_eq!(web["args"][7], "--url");
        assert_eq!(web["args"][8], "https://x");
    }

    #[test]
    fn an_http_server_is_wrapped_with_its_headers_once() {
        let before = r#"{"servers": {"t": {"type": "http", "url": "http://127.0.0.1:8931/mcp",
            "headers": {"Authorization": "Bearer k"}}, "old": {"type": "sse", "url": "http://x/sse"}}}"#;
        let (text, wrapped) =
            rewrite(Host::Vscode, Some(before), Some("t"), None, &gateway()).unwrap();
        assert_eq!(wrapped, [("t".into(), "http://127.0.0.1:8931/mcp".into())]);
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let t = &v["servers"]["t"];
        assert_eq!(t["type"], "stdio");
        assert!(t.get("url").is_none() && t.get("headers").is_none(), "{t}");
        let args: Vec<&str> = t["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        assert_eq!(
            args[5..],
            ["--server", "t", "--url", "http://127.0.0.1:8931/mcp"]
        );
        assert_eq!(
            t["env"][crate::mcp_proxy::HEADERS_ENV],
            "Authorization: Bearer k"
        );
        let (again, _) = rewrite(Host::Vscode, Some(&text), Some("t"), None, &gateway()).unwrap();
        assert_eq!(again, text);
        // The older SSE transport is not Streamable HTTP: refused by name, skipped by `--all`.
        let err = rewrite(Host::Vscode, Some(before), Some("old"), None, &gateway()).unwrap_err();
        assert!(err.to_string().contains("older SSE transport"), "{err}");
        let (_, all) = rewrite(Host::Vscode, Some(before), None, None, &gateway()).unwrap();
        assert_eq!(all.len(), 1);
    }

    #[test]
    fn vs_code_servers_are_stdio_entries_under_servers() {
        let cmd = ["/bin/cat".to_string()];
        let (text, _) = rewrite(
            Host::Vscode,
            None,
            Some("my server"),
            Some(&cmd),
            &gateway(),
        )
        .unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let e = &v["servers"]["my server"];
        assert_eq!(e["type"], "stdio");
        assert_eq!(e["args"][6], "my_server", "{e}");
        assert_eq!(e["args"][8], "/bin/cat");
    }

    #[test]
    fn what_cannot_be_rewritten_is_refused() {
        let g = gateway();
        let err = |text: &str, server| {
            rewrite(Host::Cursor, Some(text), server, None, &g)
                .unwrap_err()
                .to_string()
        };
        assert_eq!(err("[1]", Some("a")), "the root is not a JSON object");
        assert_eq!(
            err(r#"{"mcpServers": []}"#, Some("a")),
            "`mcpServers` is not an object"
        );
        assert!(err(r#"{"mcpServers": {}}"#, Some("a")).starts_with("no server \"a\""));
        assert!(err("{// c\n}", Some("a")).contains("comments are not supported"));
        let web = r#"{"mcpServers": {"w": {"url": 7}}}"#;
        assert!(err(web, Some("w")).contains("`url` is not a string"));
        let missing = r#"{"mcpServers": {"m": {"command": "no-such-program-here"}}}"#;
        assert!(err(missing, Some("m")).contains("is not in PATH"));
    }

    #[test]
    fn host_names_become_gateway_names() {
        assert_eq!(gateway_name("filesystem"), "filesystem");
        assert_eq!(gateway_name("My Server.v2"), "My_Server_v2");
        assert_eq!(gateway_name("a__b"), "a_b");
        assert_eq!(gateway_name("ü"), "server");
    }
}
