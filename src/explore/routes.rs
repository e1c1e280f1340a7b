//! The routes (`spec/explorer.md` §2) and the shared state behind them.

use super::entries::Filter;
use super::guard::{guard, Access};
use super::page;
use super::verify::{self, Job, VerifyState};
use super::{lock, Explorer};
use crate::record::EntryId;
use axum::extract::{Path, Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use axum::Router;
use maud::{html, Markup};
use std::sync::{Arc, Mutex};

/// What every handler shares.
pub(super) struct App {
    explorer: Mutex<Explorer>,
    verify: Arc<Mutex<VerifyState>>,
    access: Arc<Access>,
}

impl App {
    pub(super) fn new(explorer: Explorer, access: Access) -> App {
        App {
            explorer: Mutex::new(explorer),
            verify: Arc::new(Mutex::new(VerifyState::Idle)),
            access: Arc::new(access),
        }
    }

    /// Renders a page from the explorer's state.
    fn page(&self, f: impl FnOnce(&Explorer) -> Result<Markup, PageError>) -> Response {
        match f(&lock(&self.explorer)) {
            Ok(m) => html_response(StatusCode::OK, m),
            Err(e) => error_page(e.status, e.title, &e.why),
        }
    }
}

/// The router: every route behind the guard (token, Host, security headers).
pub(super) fn router(app: Arc<App>) -> Router {
    let access = Arc::clone(&app.access);
    Router::new()
        .route("/", get(overview))
        .route("/verify", get(verify_status).post(verify_start))
        .route("/entries", get(entries))
        .route("/entry/{id}", get(entry))
        .route("/entry/{id}/proof", get(proof))
        .route("/quarantine", get(quarantine_all))
        .route("/quarantine/{flag}", get(quarantine_flag))
        .route("/calls", get(calls))
        .route("/style.css", get(style))
        .fallback(not_found)
        .with_state(app)
        .layer(axum::middleware::from_fn_with_state(access, guard))
}

/// A page that cannot be shown: its status, title and reason.
struct PageError {
    status: StatusCode,
    title: &'static str,
    why: String,
}

impl PageError {
    fn new(status: StatusCode, title: &'static str, why: impl Into<String>) -> PageError {
        PageError {
            status,
            title,
            why: why.into(),
        }
    }
}

#[derive(serde::Deserialize)]
struct PageNo {
    page: Option<usize>,
}

async fn overview(State(app): State<Arc<App>>) -> Response {
    let v = lock(&app.verify).clone();
    app.page(|x| Ok(super::overview::render(x, &v)))
}

async fn verify_start(State(app): State<Arc<App>>) -> Response {
    let job = {
        let x = lock(&app.explorer);
        Job {
            path: x.path.clone(),
            vkey: x.ledger.vkey(),
            policy: x.ledger.policy(),
        }
    };
    verify::start(&app.verify, job);
    Redirect::to("/verify").into_response()
}

async fn verify_status(State(app): State<Arc<App>>) -> Response {
    let v = lock(&app.verify).clone();
    html_response(StatusCode::OK, verify::render(&v))
}

async fn entries(State(app): State<Arc<App>>, Query(f): Query<Filter>) -> Response {
    app.page(|x| Ok(super::entries::render(x, &f)))
}

async fn entry(State(app): State<Arc<App>>, Path(id): Path<String>) -> Response {
    app.page(|x| {
        let (i, row) = find(x, &id)?;
        Ok(super::entry::render(x, i, row))
    })
}

async fn proof(State(app): State<Arc<App>>, Path(id): Path<String>) -> Response {
    let x = lock(&app.explorer);
    let (_, row) = match find(&x, &id) {
        Ok(found) => found,
        Err(e) => return error_page(e.status, e.title, &e.why),
    };
    match super::entry::bundle(&x, &row.id) {
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
}

async fn quarantine_all(State(app): State<Arc<App>>, Query(p): Query<PageNo>) -> Response {
    app.page(|x| Ok(super::quarantine::render_all(x, p.page.unwrap_or(1))))
}

async fn quarantine_flag(
    State(app): State<Arc<App>>,
    Path(flag): Path<String>,
    Query(p): Query<PageNo>,
) -> Response {
    app.page(|x| {
        let id = parse_id(&flag)?;
        let Some(f) = x.ledger.quarantine().flag(&id).copied() else {
            return Err(PageError::new(
                StatusCode::NOT_FOUND,
                "No such flag",
                "no active flag has this id (it may have been released)",
            ));
        };
        Ok(super::quarantine::render_flag(x, &f, p.page.unwrap_or(1)))
    })
}

async fn calls(State(app): State<Arc<App>>, Query(p): Query<PageNo>) -> Response {
    app.page(|x| Ok(super::calls::render(x, p.page.unwrap_or(1))))
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

/// The leaf and row of the entry named by the hex id `s`.
fn find<'x>(x: &'x Explorer, s: &str) -> Result<(u64, &'x super::index::Row), PageError> {
    let id = parse_id(s)?;
    let unknown = || {
        PageError::new(
            StatusCode::NOT_FOUND,
            "Unknown entry",
            "no entry has this id",
        )
    };
    let i = x.ledger.index_of(&id).ok_or_else(unknown)?;
    let row = x.index.row(i).ok_or_else(unknown)?;
    Ok((i, row))
}

fn html_response(status: StatusCode, m: Markup) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        m.into_string(),
    )
        .into_response()
}

fn error_page(status: StatusCode, title: &str, why: &str) -> Response {
    html_response(
        status,
        page::layout(
            title,
            html! { p.bad { (page::hostile(why, page::MAX_SHORT_CHARS)) } },
        ),
    )
}
