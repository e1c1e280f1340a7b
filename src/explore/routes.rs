//! The routes (`spec/explorer.md` §2) and the shared state behind them.
//!
//! Every page is rendered on the runtime's blocking pool by one of the explorer's read handles
//! ([`Pool`]): a slow page holds one handle, the others keep answering, and the stylesheet and
//! refusals never wait for a page.

use super::entries::Filter;
use super::guard::{guard, Access};
use super::page::{self, BadQuery};
use super::verify::{self, Job, VerifyState};
use super::{lock, Explorer};
use crate::record::EntryId;
use crate::store::Store as _;
use axum::extract::{Path, Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use axum::Router;
use maud::{html, Markup};
use std::sync::{Arc, Condvar, Mutex};

/// What every handler shares.
pub(super) struct App {
    pool: Pool,
    indexing: Arc<super::Indexing>,
    verify: Arc<Mutex<VerifyState>>,
    access: Arc<Access>,
}

impl App {
    pub(super) fn new(explorers: Vec<Explorer>, access: Access) -> App {
        let indexing = explorers
            .first()
            .map_or_else(Default::default, |x| Arc::clone(&x.indexing));
        App {
            indexing,
            pool: Pool {
                free: Mutex::new(explorers),
                back: Condvar::new(),
            },
            verify: Arc::new(Mutex::new(VerifyState::Idle)),
            access: Arc::new(access),
        }
    }
}

/// The read handles: a page takes one, renders, and gives it back (also if it panicked).
struct Pool {
    free: Mutex<Vec<Explorer>>,
    back: Condvar,
}

impl Pool {
    fn with<R>(&self, f: impl FnOnce(&Explorer) -> R) -> R {
        let mut free = lock(&self.free);
        let x = loop {
            if let Some(x) = free.pop() {
                break x;
            }
            free = match self.back.wait(free) {
                Ok(g) => g,
                Err(poisoned) => poisoned.into_inner(),
            };
        };
        drop(free);
        let mut x = x;
        x.catch_up();
        let held = Held {
            pool: self,
            x: Some(x),
        };
        match &held.x {
            Some(x) => f(x),
            // INVARIANT: `held.x` is `Some` until `held` is dropped.
            None => unreachable!("a held reader is present until dropped"),
        }
    }
}

/// A reader out of the pool, put back on drop.
struct Held<'p> {
    pool: &'p Pool,
    x: Option<Explorer>,
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        if let Some(x) = self.x.take() {
            lock(&self.pool.free).push(x);
            self.pool.back.notify_one();
        }
    }
}

/// Runs `f` on a read handle on the blocking pool.
async fn on_reader(
    app: Arc<App>,
    f: impl FnOnce(&Explorer) -> Response + Send + 'static,
) -> Response {
    on_indexed(app, false, f).await
}

/// Runs `f` on a read handle on the blocking pool once the index is complete, or after
/// [`super::INDEX_WAIT`] (the page then says it is still indexing), when `needs_index`.
async fn on_indexed(
    app: Arc<App>,
    needs_index: bool,
    f: impl FnOnce(&Explorer) -> Response + Send + 'static,
) -> Response {
    match tokio::task::spawn_blocking(move || {
        if needs_index {
            let _ = app.indexing.wait(super::INDEX_WAIT);
        }
        app.pool.with(f)
    })
    .await
    {
        Ok(r) => r,
        Err(_) => error_page(
            StatusCode::INTERNAL_SERVER_ERROR,
            "Page failed",
            "rendering this page failed",
        ),
    }
}

/// A rendered page or its error page.
fn page(r: Result<Markup, PageError>) -> Response {
    match r {
        Ok(m) => html_response(StatusCode::OK, m),
        Err(e) => error_page(e.status, e.title, &e.why),
    }
}

/// The router: every route behind the guard (token, Host, security headers).
pub(super) fn router(app: Arc<App>) -> Router {
    let access = Arc::clone(&app.access);
    Router::new()
        .route("/", get(landing))
        .route("/ledger", get(overview))
        .route("/verify", get(verify_status).post(verify_start))
        .route("/entries", get(entries))
        .route("/entry/{id}", get(entry))
        .route("/entry/{id}/proof", get(proof))
        .route("/find", get(find_box))
        .route("/quarantine", get(quarantine_all))
        .route("/quarantine/{flag}", get(quarantine_flag))
        .route("/calls", get(calls))
        .route("/style.css", get(style))
        .fallback(not_found)
        .with_state(app)
        .layer(axum::middleware::from_fn_with_state(access, guard))
}

/// A page that cannot be shown: its status, title and reason.
pub(super) struct PageError {
    status: StatusCode,
    title: &'static str,
    why: String,
}

impl PageError {
    /// Why the page cannot be shown.
    pub(super) fn why(&self) -> &str {
        &self.why
    }

    pub(super) fn new(status: StatusCode, title: &'static str, why: impl Into<String>) -> Self {
        PageError {
            status,
            title,
            why: why.into(),
        }
    }
}

impl From<BadQuery> for PageError {
    fn from(b: BadQuery) -> Self {
        PageError::new(StatusCode::BAD_REQUEST, "Bad query", b.0)
    }
}

/// `?page=` (and `?sort=` where a page is sortable), as given: parsed by the page.
#[derive(serde::Deserialize)]
pub(super) struct PageQuery {
    pub page: Option<String>,
    pub sort: Option<String>,
}

async fn landing(State(app): State<Arc<App>>, Query(q): Query<PageQuery>) -> Response {
    on_indexed(app, true, move |x| page(super::landing::render(x, &q))).await
}

async fn overview(State(app): State<Arc<App>>) -> Response {
    let v = lock(&app.verify).clone();
    on_reader(app, move |x| page(Ok(super::overview::render(x, &v)))).await
}

async fn verify_start(State(app): State<Arc<App>>) -> Response {
    let verify = Arc::clone(&app.verify);
    let job = on_reader(app, move |x| {
        let job = Job {
            path: x.path.clone(),
            vkey: x.ledger.vkey(),
            policy: x.ledger.label_policy(),
        };
        verify::start(&verify, job);
        Redirect::to("/verify").into_response()
    });
    job.await
}

async fn verify_status(State(app): State<Arc<App>>) -> Response {
    let v = lock(&app.verify).clone();
    html_response(StatusCode::OK, verify::render(&v))
}

async fn entries(State(app): State<Arc<App>>, Query(f): Query<Filter>) -> Response {
    let filtered = f.is_filtered();
    on_indexed(app, filtered, move |x| page(super::entries::render(x, &f))).await
}

async fn entry(State(app): State<Arc<App>>, Path(id): Path<String>) -> Response {
    let short = is_short_id(&id);
    on_indexed(app, short, move |x| match find_entry(x, &id) {
        Ok(Found::One(i)) => match x.row(i) {
            // A full id is shown as asked (the row of an entry that did not verify holds the
            // hash of the bytes stored, not the id asked for); a short one is sent on to it.
            Some(row) if id.len() == 64 => {
                html_response(StatusCode::OK, super::entry::render(x, i, &row))
            }
            Some(row) => Redirect::to(&format!("/entry/{}", row.id)).into_response(),
            None => page(Err(unknown())),
        },
        Ok(Found::Many(m)) => page(Ok(super::find::ambiguous(&id, &m))),
        Err(e) => page(Err(e)),
    })
    .await
}

#[derive(serde::Deserialize)]
struct FindQuery {
    id: Option<String>,
}

async fn find_box(State(app): State<Arc<App>>, Query(q): Query<FindQuery>) -> Response {
    let asked = q.id.unwrap_or_default();
    let short = is_short_id(&asked);
    on_indexed(app, short, move |x| match find_entry(x, &asked) {
        Ok(Found::One(i)) => match x.row(i) {
            Some(row) => Redirect::to(&format!("/entry/{}", row.id)).into_response(),
            None => page(Err(unknown())),
        },
        Ok(Found::Many(m)) => page(Ok(super::find::ambiguous(&asked, &m))),
        Err(e) => page(Err(e)),
    })
    .await
}

async fn proof(State(app): State<Arc<App>>, Path(id): Path<String>) -> Response {
    on_reader(app, move |x| {
        let row = match find(x, &id) {
            Ok((_, row)) => row,
            Err(e) => return error_page(e.status, e.title, &e.why),
        };
        match super::entry::bundle(x, &row.id) {
            Ok(b) => (
                StatusCode::OK,
                [
                    (
                        header::CONTENT_TYPE,
                        "text/plain; charset=utf-8".to_string(),
                    ),
                    (
                        header::CONTENT_DISPOSITION,
                        format!("attachment; filename=\"{}.proof\"", row.id.short()),
                    ),
                ],
                b.to_text(),
            )
                .into_response(),
            Err(e) => error_page(StatusCode::CONFLICT, "No proof bundle", &e),
        }
    })
    .await
}

async fn quarantine_all(State(app): State<Arc<App>>, Query(q): Query<PageQuery>) -> Response {
    on_indexed(app, true, move |x| {
        page(super::quarantine::render_all(x, q.page.as_deref()))
    })
    .await
}

async fn quarantine_flag(
    State(app): State<Arc<App>>,
    Path(flag): Path<String>,
    Query(q): Query<PageQuery>,
) -> Response {
    on_indexed(app, true, move |x| {
        page((|| {
            let id = parse_id(&flag)?;
            let Some(f) = x.ledger.quarantine().flag(&id).copied() else {
                return Err(PageError::new(
                    StatusCode::NOT_FOUND,
                    "No such flag",
                    "no active flag has this id (it may have been released)",
                ));
            };
            super::quarantine::render_flag(x, &f, q.page.as_deref())
        })())
    })
    .await
}

async fn calls(State(app): State<Arc<App>>, Query(q): Query<PageQuery>) -> Response {
    on_indexed(app, true, move |x| {
        page(super::calls::render(x, q.page.as_deref()))
    })
    .await
}

async fn style() -> Response {
    (
        [(header::CONTENT_TYPE, "text/css; charset=utf-8")],
        page::STYLE,
    )
        .into_response()
}

async fn not_found() -> Response {
    error_page(StatusCode::NOT_FOUND, "Not found", "no such page")
}

fn parse_id(s: &str) -> Result<EntryId, PageError> {
    EntryId::from_hex(s)
        .map_err(|e| PageError::new(StatusCode::BAD_REQUEST, "Bad id", e.to_string()))
}

fn unknown() -> PageError {
    PageError::new(
        StatusCode::NOT_FOUND,
        "Unknown entry",
        "no entry has this id",
    )
}

/// What an id box or an `/entry/` path names.
enum Found {
    /// One leaf.
    One(u64),
    /// Several entries whose ids start with the digits given (up to a page of them).
    Many(Vec<(EntryId, u64)>),
}

/// Resolves a full id, a short id (4 to 63 hex digits, as the CLI prints 8) or a leaf number
/// (`#12`; a bare number is read as hex digits, which a short id may be made of).
fn find_entry(x: &Explorer, s: &str) -> Result<Found, PageError> {
    let s = s.trim();
    if let Some(n) = s.strip_prefix('#') {
        let i = n.parse::<u64>().map_err(|_| {
            PageError::new(
                StatusCode::BAD_REQUEST,
                "Bad leaf",
                "#N takes a leaf number",
            )
        })?;
        return match i < x.ledger.len() {
            true => Ok(Found::One(i)),
            false => Err(PageError::new(
                StatusCode::NOT_FOUND,
                "Unknown entry",
                format!("the log has {} leaves, numbered from 0", x.ledger.len()),
            )),
        };
    }
    if s.len() == 64 {
        return find(x, s).map(|(i, _)| Found::One(i));
    }
    let hex = s.to_ascii_lowercase();
    if !(4..64).contains(&hex.len()) || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(PageError::new(
            StatusCode::BAD_REQUEST,
            "Bad id",
            "give an entry id (64 hex digits), a short id (at least 4 of its first hex \
             digits, as the CLI prints 8) or a leaf number (#12)",
        ));
    }
    let m = x.indexed()?.index.with_prefix(&hex, super::PAGE_SIZE + 1);
    match m.as_slice() {
        [] => Err(PageError::new(
            StatusCode::NOT_FOUND,
            "Unknown entry",
            "no verified entry's id starts with these digits",
        )),
        [(_, i)] => Ok(Found::One(*i)),
        _ => Ok(Found::Many(m)),
    }
}

/// The leaf and row of the entry named by the hex id `s`.
fn find<'x>(
    x: &'x Explorer,
    s: &str,
) -> Result<(u64, std::borrow::Cow<'x, super::index::Row>), PageError> {
    let id = parse_id(s)?;
    if let Some(i) = x.ledger.index_of(&id) {
        let row = x.row(i).ok_or_else(unknown)?;
        return Ok((i, row));
    }
    // Not an entry the ledger believes (its row's tag does not verify, or it is not stored):
    // the leaf the store claims for it is only where to look. The row there is made through
    // the one door, and its leaf hash must be the id asked; it cannot have a shape (that needs
    // `index_of` to name this leaf), so the page says the entry did not verify: shown, never
    // better (`spec/explorer.md` §3.2).
    let claimed = x.ledger.store().meta_of(&id).ok().flatten();
    claimed
        .and_then(|m| Some((m.index, x.row(m.index)?)))
        .filter(|(_, row)| row.id == id)
        .ok_or_else(unknown)
}

/// Whether the id box's or the path's `s` names entries by a short id, which only the
/// complete index resolves (a full id and `#N` are found in the store).
fn is_short_id(s: &str) -> bool {
    let s = s.trim();
    !s.starts_with('#') && s.len() != 64
}

fn html_response(status: StatusCode, m: Markup) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        m.into_string(),
    )
        .into_response()
}

/// Seconds after which a page that is still indexing asks to be loaded again.
const RETRY_SECONDS: u32 = 2;

fn error_page(status: StatusCode, title: &str, why: &str) -> Response {
    let body = html! { p.bad { (page::hostile(why, page::MAX_SHORT_CHARS)) } };
    if status == StatusCode::SERVICE_UNAVAILABLE {
        // Still indexing (spec/explorer.md §3.3): the page loads itself again until it can be
        // answered, as `/verify` does while the audit runs.
        let mut r = html_response(status, page::refreshing(title, RETRY_SECONDS, body));
        r.headers_mut().insert(
            header::RETRY_AFTER,
            header::HeaderValue::from(RETRY_SECONDS),
        );
        return r;
    }
    html_response(status, page::layout(title, body))
}
