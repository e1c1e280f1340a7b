//! The terminal progress bar of `memlineage verify`: drawn on standard error only when it is a
//! terminal and the audit is long; otherwise (pipes, files, CI logs) nothing is drawn at all.
//! The audit library only reports counts through [`AuditProgress`]; all terminal code is here.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use memlineage::audit::{AuditProgress, AUDIT_CHUNK};
use std::io::IsTerminal as _;

/// Audits of at most this many entries (one decoding chunk, well under a second) get no bar:
/// it would appear and vanish in one report.
const MIN_ENTRIES_FOR_BAR: u64 = AUDIT_CHUNK as u64;

/// Layout of the bar (indicatif template syntax, <https://docs.rs/indicatif/0.18.6>).
const TEMPLATE: &str = "verifying {bar:40} {pos}/{len} entries ({per_sec}, eta {eta})";

/// A progress bar over `total` entries, cleared when dropped.
pub struct AuditBar(ProgressBar);

impl AuditBar {
    /// A bar for an audit of `total` entries: visible on a terminal standard error when
    /// `total` exceeds one decoding chunk, hidden (draws nothing) otherwise.
    pub fn new(total: u64) -> Self {
        let target = if std::io::stderr().is_terminal() && total > MIN_ENTRIES_FOR_BAR {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        let bar = ProgressBar::with_draw_target(Some(total), target);
        // The template is a constant; should it ever fail to parse, fall back to the plain bar.
        let style =
            ProgressStyle::with_template(TEMPLATE).unwrap_or_else(|_| ProgressStyle::default_bar());
        bar.set_style(style);
        AuditBar(bar)
    }
}

impl AuditProgress for AuditBar {
    fn entries_checked(&mut self, checked: u64) {
        self.0.set_position(checked);
    }
}

impl Drop for AuditBar {
    fn drop(&mut self) {
        // Leave no bar behind: the report that follows starts on a clean line.
        self.0.finish_and_clear();
    }
}
