//! `search` over the item index (`spec/python.md` §2.3, §2.5): which items a search returns,
//! in which order, before anything is verified. Only the page chosen here is verified and
//! recorded as read (`Engine::item_search`), so a search costs `limit` verifications however
//! many items lie under the prefix.

use crate::errors::BindError;
use crate::filter;
use crate::items::{Path, Slot};
use crate::vectors::{self, Vector};
use memlineage::record::EntryId;
use serde_json::{Map, Value};

/// What a search asks for.
pub struct Request<'a> {
    /// Namespace prefix.
    pub prefix: &'a [String],
    /// `InMemoryStore`'s filter (`filter::matches`), if any.
    pub filter: Option<&'a Map<String, Value>>,
    /// The query's vector, when the store has an index and the search a `query`.
    pub query: Option<&'a Vector>,
    /// Items skipped first.
    pub offset: usize,
    /// Most items returned.
    pub limit: usize,
}

/// What a search chose.
#[derive(Debug, PartialEq)]
pub enum Ranked {
    /// The page: entry ids in order, with their scores (`None` without a query, or for an
    /// item with no embedded field).
    Page(Vec<(EntryId, Option<f64>)>),
    /// Matching items whose current versions have no vectors yet: embed them
    /// (`Engine::item_embed`) and search again.
    Unembedded(Vec<EntryId>),
}

/// Chooses the page of `candidates` (live, unquarantined items in `InMemoryStore`'s order)
/// that `req` asks for, as `InMemoryStore` does: without a query, the matching items in order,
/// `offset..offset + limit`; with one, the items with vectors by best cosine similarity
/// (ties in order), `offset..offset + limit`, then — if that leaves room — the items with no
/// embedded field, in order, up to `limit` (`InMemoryStore`'s "scoreless" fill).
///
/// # Errors
/// A filter `InMemoryStore` would raise on ([`filter::matches`]); vectors whose dimensions
/// differ from the query's.
pub fn rank<'a>(
    candidates: impl Iterator<Item = (&'a Path, &'a Slot)>,
    req: &Request<'_>,
) -> Result<Ranked, BindError> {
    let end = req.offset.saturating_add(req.limit);
    let mut plain: Vec<EntryId> = Vec::new();
    let mut scored: Vec<(f64, EntryId)> = Vec::new();
    let mut missing: Vec<EntryId> = Vec::new();
    for (path, slot) in candidates {
        if !path.0.starts_with(req.prefix) {
            continue;
        }
        if let Some(f) = req.filter {
            if !filter::matches(&slot.value, f)? {
                continue;
            }
        }
        let Some(q) = req.query else {
            plain.push(slot.entry);
            if plain.len() >= end {
                break;
            }
            continue;
        };
        match &slot.vectors {
            None => missing.push(slot.entry),
            Some(vs) => match vectors::best(q, vs)? {
                Some(s) => scored.push((s, slot.entry)),
                None => plain.push(slot.entry),
            },
        }
    }
    if req.query.is_none() {
        let page = plain.into_iter().skip(req.offset).map(|e| (e, None));
        return Ok(Ranked::Page(page.collect()));
    }
    if !missing.is_empty() {
        return Ok(Ranked::Unembedded(missing));
    }
    // Stable: equal scores keep the index's order, as Python's `sorted` does.
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    let mut page: Vec<(EntryId, Option<f64>)> = scored
        .into_iter()
        .skip(req.offset)
        .take(req.limit)
        .map(|(s, e)| (e, Some(s)))
        .collect();
    let room = req.limit.saturating_sub(page.len());
    page.extend(plain.into_iter().take(room).map(|e| (e, None)));
    Ok(Ranked::Page(page))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn slot(n: u8, value: Value, vectors: Option<Vec<Vector>>) -> (Path, Slot) {
        let path = (vec!["ns".to_string()], format!("k{n}"));
        let slot = Slot {
            entry: EntryId([n; 32]),
            created_ms: 0,
            updated_ms: 0,
            created_index: u64::from(n),
            value,
            vectors,
        };
        (path, slot)
    }

    fn vec1(x: f32, y: f32) -> Result<Option<Vec<Vector>>, BindError> {
        Ok(Some(vec![Vector::new("text".into(), vec![x, y])?]))
    }

    fn run(items: &[(Path, Slot)], req: &Request<'_>) -> Result<Ranked, BindError> {
        rank(items.iter().map(|(p, s)| (p, s)), req)
    }

    fn req<'a>(query: Option<&'a Vector>, offset: usize, limit: usize) -> Request<'a> {
        Request {
            prefix: &[],
            filter: None,
            query,
            offset,
            limit,
        }
    }

    #[test]
    fn without_a_query_the_page_is_in_order() -> Result<(), BindError> {
        let items: Vec<_> = (1..=5).map(|n| slot(n, json!({"n": n}), None)).collect();
        let got = run(&items, &req(None, 1, 2))?;
        let want = vec![(EntryId([2; 32]), None), (EntryId([3; 32]), None)];
        assert_eq!(got, Ranked::Page(want));
        let f = json!({"n": {"$gte": 4}});
        let mut r = req(None, 0, 10);
        r.filter = f.as_object();
        let want = vec![(EntryId([4; 32]), None), (EntryId([5; 32]), None)];
        assert_eq!(run(&items, &r)?, Ranked::Page(want));
        let other = [String::from("other")];
        r.prefix = &other;
        assert_eq!(run(&items, &r)?, Ranked::Page(vec![]));
        Ok(())
    }

    #[test]
    fn a_query_ranks_by_similarity_then_fills_with_scoreless_items() -> Result<(), BindError> {
        let q = Vector::new("query".into(), vec![1.0, 0.0])?;
        let items = vec![
            slot(1, json!({}), vec1(0.0, 1.0)?),
            slot(2, json!({}), Some(vec![])),
            slot(3, json!({}), vec1(1.0, 0.0)?),
            slot(4, json!({}), vec1(1.0, 1.0)?),
        ];
        let Ranked::Page(page) = run(&items, &req(Some(&q), 0, 10))? else {
            return Err(BindError::misuse("not a page"));
        };
        let order: Vec<u8> = page.iter().map(|(e, _)| e.0[0]).collect();
        assert_eq!(order, vec![3, 4, 1, 2]);
        assert_eq!(page[0].1, Some(1.0));
        assert_eq!(page[3].1, None);
        let Ranked::Page(page) = run(&items, &req(Some(&q), 1, 1))? else {
            return Err(BindError::misuse("not a page"));
        };
        assert_eq!(page, vec![(EntryId([4; 32]), page[0].1)]);
        Ok(())
    }

    #[test]
    fn items_without_vectors_are_asked_for() -> Result<(), BindError> {
        let q = Vector::new("query".into(), vec![1.0, 0.0])?;
        let items = vec![
            slot(1, json!({}), vec1(0.0, 1.0)?),
            slot(2, json!({}), None),
        ];
        let got = run(&items, &req(Some(&q), 0, 10))?;
        assert_eq!(got, Ranked::Unembedded(vec![EntryId([2; 32])]));
        Ok(())
    }
}
