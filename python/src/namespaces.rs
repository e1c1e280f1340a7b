//! `list_namespaces` over the item index (`spec/python.md` §2.3): which namespaces a listing
//! shows, and which items stand behind each. A namespace is text an item's writer chose, as
//! its value is: the listing shows it only with the items that hold it recorded as read by the
//! session (`Engine::item_namespaces`), so a value moved into a namespace keeps its lineage
//! (attack review 50: before, the listing recorded nothing and the value it showed was
//! unsourced).

use crate::errors::BindError;
use crate::items::Path;
use memlineage::record::EntryId;
use std::collections::BTreeMap;

/// `InMemoryStore`'s match types (`langgraph.store.base.MatchCondition`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MatchType {
    /// The namespace starts with the path.
    Prefix,
    /// The namespace ends with the path.
    Suffix,
}

impl MatchType {
    /// `"prefix"` or `"suffix"`.
    ///
    /// # Errors
    /// Any other name (`InMemoryStore` raises `ValueError` on it).
    pub fn parse(name: &str) -> Result<Self, BindError> {
        match name {
            "prefix" => Ok(MatchType::Prefix),
            "suffix" => Ok(MatchType::Suffix),
            other => Err(BindError::misuse(format!(
                "Unsupported match type: {other}"
            ))),
        }
    }
}

/// What a listing asks for: `ListNamespacesOp`'s fields.
pub struct Listing {
    /// Every condition must match (`*` matches any label).
    pub conditions: Vec<(MatchType, Vec<String>)>,
    /// Namespaces cut to this many labels (then deduplicated).
    pub max_depth: Option<usize>,
    /// Most namespaces returned.
    pub limit: usize,
    /// Namespaces skipped first.
    pub offset: usize,
}

/// `langgraph.store.memory._does_match`: whether `ns` matches one condition.
fn matches(kind: MatchType, path: &[String], ns: &[String]) -> bool {
    if ns.len() < path.len() {
        return false;
    }
    let label = |p: &String, k: &String| p == "*" || p == k;
    match kind {
        MatchType::Prefix => path.iter().zip(ns).all(|(p, k)| label(p, k)),
        MatchType::Suffix => path
            .iter()
            .rev()
            .zip(ns.iter().rev())
            .all(|(p, k)| label(p, k)),
    }
}

/// The page of namespaces `listing` shows out of `live` (the live, unquarantined items), as
/// `InMemoryStore` lists them (every namespace matching every condition, cut to `max_depth`,
/// sorted, deduplicated, `offset..offset + limit`), each with the entries of the items whose
/// namespace it shows (every one: the worst of them decides what the text it shows may
/// justify).
pub fn page<'a>(
    live: impl Iterator<Item = (&'a Path, EntryId)>,
    listing: &Listing,
) -> Vec<(Vec<String>, Vec<EntryId>)> {
    let mut shown: BTreeMap<Vec<String>, Vec<EntryId>> = BTreeMap::new();
    for (path, entry) in live {
        let ns = &path.0;
        if !listing.conditions.iter().all(|(k, p)| matches(*k, p, ns)) {
            continue;
        }
        let cut = listing.max_depth.map_or(ns.len(), |d| d.min(ns.len()));
        shown.entry(ns[..cut].to_vec()).or_default().push(entry);
    }
    shown
        .into_iter()
        .skip(listing.offset)
        .take(listing.limit)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(ns: &[&str]) -> Path {
        (ns.iter().map(|s| s.to_string()).collect(), "k".to_string())
    }

    fn list(items: &[(Path, EntryId)], listing: &Listing) -> Vec<(Vec<String>, Vec<u8>)> {
        page(items.iter().map(|(p, e)| (p, *e)), listing)
            .into_iter()
            .map(|(ns, es)| (ns, es.iter().map(|e| e.0[0]).collect()))
            .collect()
    }

    fn strings(ns: &[&str]) -> Vec<String> {
        ns.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_listing_names_every_item_behind_each_namespace_it_shows() {
        let items: Vec<(Path, EntryId)> = [
            (&["a", "b", "c"][..], 1),
            (&["a", "b", "d", "e"][..], 2),
            (&["a", "b", "d", "i"][..], 3),
            (&["a", "b", "f"][..], 4),
            (&["a", "c", "f"][..], 5),
            (&["a", "b", "c"][..], 6),
        ]
        .iter()
        .map(|(ns, n)| (path(ns), EntryId([*n; 32])))
        .collect();
        let all = Listing {
            conditions: vec![(MatchType::Prefix, strings(&["a", "b"]))],
            max_depth: Some(3),
            limit: 100,
            offset: 0,
        };
        assert_eq!(
            list(&items, &all),
            vec![
                (strings(&["a", "b", "c"]), vec![1, 6]),
                (strings(&["a", "b", "d"]), vec![2, 3]),
                (strings(&["a", "b", "f"]), vec![4]),
            ]
        );
        let suffix = Listing {
            conditions: vec![(MatchType::Suffix, strings(&["*", "f"]))],
            max_depth: None,
            limit: 1,
            offset: 1,
        };
        assert_eq!(
            list(&items, &suffix),
            vec![(strings(&["a", "c", "f"]), vec![5])]
        );
        assert!(MatchType::parse("infix").is_err());
    }
}
