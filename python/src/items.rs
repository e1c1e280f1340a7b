//! Store items as ledger entries (`spec/python.md` §2): how a LangGraph `(namespace, key)` maps
//! onto entries, and the index of the current version of each.
//!
//! An item version is a `summary` entry of an agent principal whose content is the JSON object
//! `{"format": ITEM_FORMAT, "namespace": [..], "key": "..", "value": {..}}`. The current
//! version of `(namespace, key)` is the last such entry in log order; if a tombstone targets
//! it, the item is deleted (an older version never comes back). The index is built only from
//! entries whose signatures and content hashes this process verified.

use crate::errors::BindError;
use crate::vectors::Vector;
use memlineage::record::{EntryId, Kind, Role};
use memlineage::store::Store;
use memlineage::Ledger;
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, HashMap};

/// The `format` member of an item version's content.
pub const ITEM_FORMAT: &str = "memlineage/langgraph-item@v1";

/// A namespace (tuple of labels) and a key.
pub type Path = (Vec<String>, String);

/// The current version of one item.
#[derive(Clone, Debug)]
pub struct Slot {
    /// The entry holding it.
    pub entry: EntryId,
    /// Writer time of the first version since the item was last deleted, in ms since the
    /// Unix epoch.
    pub created_ms: u64,
    /// Writer time of this version, in ms.
    pub updated_ms: u64,
    /// Leaf index of the first version since the item was last deleted: its place in the
    /// order `InMemoryStore` keeps (a new key goes last, an update keeps its place).
    pub created_index: u64,
    /// The value (verified content, decoded).
    pub value: Value,
    /// The vectors of this version's embedded fields (`spec/python.md` §2.5): `None` until
    /// embedded (written by another handle, or before this process opened the ledger), empty
    /// when nothing of it is embedded.
    pub vectors: Option<Vec<Vector>>,
}

/// The current version of every live item, caught up with the ledger by [`ItemIndex::scan`].
#[derive(Debug, Default)]
pub struct ItemIndex {
    /// Entries `0..scanned` have been read.
    scanned: u64,
    items: HashMap<Path, Slot>,
    by_entry: HashMap<EntryId, Path>,
    /// Leaf index of the first version ever written in each namespace (kept after its items
    /// are deleted, as `InMemoryStore` keeps a namespace's place).
    ns_first: HashMap<Vec<String>, u64>,
    /// Live items in `InMemoryStore`'s order: by `(ns_first, created_index)`.
    order: BTreeMap<(u64, u64), Path>,
}

/// The content of an item version: canonical JSON (members sorted).
pub fn content(namespace: &[String], key: &str, value: &Value) -> String {
    json!({"format": ITEM_FORMAT, "namespace": namespace, "key": key, "value": value}).to_string()
}

/// The item a version's text holds, if it is one: `(namespace, key, value)`.
pub fn parse(text: &str) -> Option<(Vec<String>, String, Value)> {
    let Value::Object(mut o) = serde_json::from_str::<Value>(text).ok()? else {
        return None;
    };
    if o.get("format").and_then(Value::as_str) != Some(ITEM_FORMAT) {
        return None;
    }
    let key = o.get("key")?.as_str()?.to_string();
    let namespace = o
        .get("namespace")?
        .as_array()?
        .iter()
        .map(|v| v.as_str().map(str::to_string))
        .collect::<Option<Vec<String>>>()?;
    let value = o.remove("value")?;
    value.is_object().then_some((namespace, key, value))
}

impl ItemIndex {
    /// Reads the entries appended since the last scan. Item versions written by agent
    /// principals replace the current version of their path; a tombstone of a current version
    /// deletes the item.
    ///
    /// # Errors
    /// When an entry cannot be read or verified: nothing after it is indexed, and the error
    /// is returned again until it can be (fail closed: that entry might be a newer version or a
    /// deletion of any item).
    pub fn scan<S: Store>(&mut self, ledger: &Ledger<S>) -> Result<(), BindError> {
        while self.scanned < ledger.len() {
            let i = self.scanned;
            let e = ledger.get_by_index(i)?;
            let entry = e.entry();
            match entry.kind {
                Kind::Summary
                    if matches!(ledger.principal(&entry.writer), Some((Role::Agent, _))) =>
                {
                    let text = ledger.content(&e)?.and_then(|b| String::from_utf8(b).ok());
                    if let Some((ns, key, value)) = text.as_deref().and_then(parse) {
                        self.index_version((ns, key), e.id(), i, entry.time_ms, value);
                    }
                }
                Kind::Tombstone => {
                    if let Some(path) = entry.target.and_then(|t| self.by_entry.remove(&t)) {
                        if let Some(old) = self.items.remove(&path) {
                            self.order.remove(&self.place(&path.0, old.created_index));
                        }
                    }
                }
                _ => {}
            }
            self.scanned = i + 1;
        }
        Ok(())
    }

    /// The current version of `path`.
    pub fn current(&self, path: &Path) -> Option<&Slot> {
        self.items.get(path)
    }

    /// The current version of `path`, to attach vectors to.
    pub fn current_mut(&mut self, path: &Path) -> Option<&mut Slot> {
        self.items.get_mut(path)
    }

    /// The path whose current version `entry` holds.
    pub fn path_of(&self, entry: &EntryId) -> Option<&Path> {
        self.by_entry.get(entry)
    }

    /// The live items in `InMemoryStore`'s order: namespaces in the order their first item
    /// was written, items in the order they were created (since last deleted).
    pub fn in_order(&self) -> impl Iterator<Item = (&Path, &Slot)> {
        self.order
            .values()
            .filter_map(|p| self.items.get(p).map(|s| (p, s)))
    }

    /// Makes the version `entry` at leaf `index` current for `path`.
    fn index_version(
        &mut self,
        path: Path,
        entry: EntryId,
        index: u64,
        time_ms: u64,
        value: Value,
    ) {
        let first = *self.ns_first.entry(path.0.clone()).or_insert(index);
        let (created_ms, created_index) = match self.items.get(&path) {
            Some(old) => {
                self.by_entry.remove(&old.entry);
                (old.created_ms, old.created_index)
            }
            None => {
                self.order.insert((first, index), path.clone());
                (time_ms, index)
            }
        };
        self.by_entry.insert(entry, path.clone());
        let slot = Slot {
            entry,
            created_ms,
            updated_ms: time_ms,
            created_index,
            value,
            vectors: None,
        };
        self.items.insert(path, slot);
    }

    /// The key of an item of namespace `ns` created at `created_index` in `order`.
    fn place(&self, ns: &[String], created_index: u64) -> (u64, u64) {
        (self.ns_first.get(ns).copied().unwrap_or(0), created_index)
    }
}

/// An item as returned to Python: `{"namespace", "key", "value", "entry_id", "label",
/// "created_ms", "updated_ms"}`.
pub fn render(path: &Path, slot: &Slot, value: Value, label: &str) -> Value {
    let mut m = Map::new();
    m.insert("namespace".into(), json!(path.0));
    m.insert("key".into(), json!(path.1));
    m.insert("value".into(), value);
    m.insert("entry_id".into(), json!(slot.entry.to_string()));
    m.insert("label".into(), json!(label));
    m.insert("created_ms".into(), json!(slot.created_ms));
    m.insert("updated_ms".into(), json!(slot.updated_ms));
    Value::Object(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_round_trips_and_other_texts_are_not_items() {
        let ns = vec!["bills".to_string(), "alice".to_string()];
        let text = content(&ns, "march", &json!({"b": 1, "a": "x"}));
        assert_eq!(
            text,
            r#"{"format":"memlineage/langgraph-item@v1","key":"march","namespace":["bills","alice"],"value":{"a":"x","b":1}}"#
        );
        assert_eq!(
            parse(&text),
            Some((ns, "march".to_string(), json!({"a": "x", "b": 1})))
        );
        assert_eq!(
            parse(r#"{"format":"other","key":"k","namespace":[],"value":{}}"#),
            None
        );
        assert_eq!(parse("plain text"), None);
        let not_object =
            r#"{"format":"memlineage/langgraph-item@v1","key":"k","namespace":[],"value":3}"#;
        assert_eq!(parse(not_object), None);
    }
}
