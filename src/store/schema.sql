-- memlineage ledger schema, version 1 (spec/storage.md).
--
-- Run once, in the transaction that creates a ledger, together with
-- PRAGMA application_id and PRAGMA user_version (set by src/store/sqlite.rs).
-- Plain tables (no STRICT, no WITHOUT ROWID) so that any SQLite 3 client can read the file.
-- The CHECK constraints reject rows no memlineage writer produces; readers check again.

-- Ledger settings (log origin, verifier key, tau, weak-parent rule): UTF-8 text.
CREATE TABLE meta (
    key   TEXT PRIMARY KEY NOT NULL,
    value TEXT NOT NULL
);

-- One row per log entry; idx is the leaf index, 0-based and contiguous.
CREATE TABLE entries (
    idx          INTEGER PRIMARY KEY CHECK (idx >= 0),
    id           BLOB NOT NULL UNIQUE CHECK (typeof(id) = 'blob' AND length(id) = 32),
    cose         BLOB NOT NULL CHECK (typeof(cose) = 'blob'),
    kind         INTEGER NOT NULL CHECK (typeof(kind) = 'integer' AND kind >= 0),
    label        INTEGER NOT NULL CHECK (typeof(label) = 'integer' AND label >= 0),
    content_hash BLOB CHECK (content_hash IS NULL
                             OR (typeof(content_hash) = 'blob' AND length(content_hash) = 32)),
    -- The row tag (spec/lineage.md section 5.1); NULL for a row stored without one. Files
    -- written by memlineage 0.1 get this column (and the index below) when first opened.
    tag          BLOB CHECK (tag IS NULL OR (typeof(tag) = 'blob' AND length(tag) = 32)),
    -- The entry's signed context hash (spec/record.md field 5), copied out of its bytes so
    -- that the entries of one session can be found without reading every row (spec/storage.md
    -- section 4.5). Untrusted like every column: readers check it against the signed bytes.
    -- NULL for a row stored without it (files written before it get the column when first
    -- opened): such rows are candidates of every lookup.
    context      BLOB CHECK (context IS NULL
                             OR (typeof(context) = 'blob' AND length(context) = 32))
);

-- The entries with effects (kinds 5 to 11: tombstone, keyring, flags, release, lease,
-- replacement; not context, 12), which a ledger reads on open instead of every row. The
-- predicate is store::EFFECTS_PREDICATE, word for word (the query that uses it repeats it).
CREATE INDEX entries_effects ON entries (idx) WHERE kind BETWEEN 5 AND 11;

-- The entries by context hash (rows without one first: NULL sorts first), for the lookup of
-- one session's entries (store::Store::context_candidates).
CREATE INDEX entries_context ON entries (context, idx);

-- Content bytes by SHA-256 content hash, one row per distinct content; redaction deletes it.
CREATE TABLE content (
    hash  BLOB PRIMARY KEY NOT NULL CHECK (typeof(hash) = 'blob' AND length(hash) = 32),
    bytes BLOB NOT NULL CHECK (typeof(bytes) = 'blob')
);

-- RFC 6962 tree hashes by stored-hash index (Crosby-Wallach section 3.3, Go sumdb/tlog).
CREATE TABLE tree_hashes (
    idx  INTEGER PRIMARY KEY CHECK (idx >= 0),
    hash BLOB NOT NULL CHECK (typeof(hash) = 'blob' AND length(hash) = 32)
);

-- Signed checkpoint notes (C2SP tlog-checkpoint) by tree size.
CREATE TABLE checkpoints (
    size INTEGER PRIMARY KEY CHECK (size >= 0),
    note BLOB NOT NULL CHECK (typeof(note) = 'blob')
);
