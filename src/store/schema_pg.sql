-- memlineage ledger schema for PostgreSQL, version 1 (spec/storage.md §11).
--
-- One ledger per PostgreSQL schema: src/store/postgres.rs runs this file once, in the
-- transaction that creates the ledger, with search_path set to the ledger's schema (so the
-- names below are schema-local). Tables mirror src/store/schema.sql (meta, entries, content,
-- tree_hashes, checkpoints) plus what several writer processes need: the sequencer counter,
-- the integrated tree state and the C2SP tlog-tiles copy of the tree.

-- Ledger settings (log origin, verifier key, tau, weak-parent rule).
CREATE TABLE meta (
    key   text PRIMARY KEY,
    value text NOT NULL
);

-- One row: the next leaf index to hand out. Locked (FOR UPDATE) by every append: appends
-- serialise on it, and numbering is gap-free because the counter moves only when the
-- appending transaction commits.
CREATE TABLE sequencer (
    one            boolean PRIMARY KEY DEFAULT true CHECK (one),
    next           bigint  NOT NULL CHECK (next >= 0),
    schema_version integer NOT NULL
);

-- One row: how many sequenced entries are in the Merkle tree, and its root MTH(D[size]).
-- Locked (FOR UPDATE) by every integration; size <= sequencer.next.
CREATE TABLE tree_state (
    one  boolean PRIMARY KEY DEFAULT true CHECK (one),
    size bigint  NOT NULL CHECK (size >= 0),
    root bytea   NOT NULL CHECK (length(root) = 32)
);

-- One row per sequenced entry; idx is the leaf index, 0-based and contiguous.
CREATE TABLE entries (
    idx          bigint   PRIMARY KEY CHECK (idx >= 0),
    id           bytea    NOT NULL UNIQUE CHECK (length(id) = 32),
    cose         bytea    NOT NULL,
    kind         smallint NOT NULL CHECK (kind >= 0),
    label        smallint NOT NULL CHECK (label >= 0),
    content_hash bytea    CHECK (content_hash IS NULL OR length(content_hash) = 32),
    -- The row tag (spec/lineage.md section 5.1); NULL for a row stored without one (sequenced
    -- rows until a handle seals them). Added to older ledgers when first connected.
    tag          bytea    CHECK (tag IS NULL OR length(tag) = 32),
    -- The entry's signed context hash, for the context index (spec/storage.md section 4.5);
    -- NULL for a row stored without it: a candidate of every lookup.
    context      bytea    CHECK (context IS NULL OR length(context) = 32)
);

-- The entries with effects (kinds 5 to 11; not context, 12), which a ledger reads on open
-- instead of every row (store::EFFECTS_PREDICATE).
CREATE INDEX entries_effects ON entries (idx) WHERE kind BETWEEN 5 AND 11;

-- The entries by context hash (spec/storage.md section 4.5).
CREATE INDEX entries_context ON entries (context, idx);

-- Content bytes by SHA-256 content hash; redaction deletes the row.
CREATE TABLE content (
    hash  bytea PRIMARY KEY CHECK (length(hash) = 32),
    bytes bytea NOT NULL
);

-- RFC 6962 tree hashes by stored-hash index (Crosby-Wallach section 3.3, Go sumdb/tlog) of the
-- integrated entries: exactly stored_hash_count(tree_state.size) rows.
CREATE TABLE tree_hashes (
    idx  bigint PRIMARY KEY CHECK (idx >= 0),
    hash bytea  NOT NULL CHECK (length(hash) = 32)
);

-- C2SP tlog-tiles hash tiles of height 8 of the integrated tree: the hashes of tree level 8*level,
-- nodes 256*idx .. 256*idx + width. The right-edge partial tile of a level is rewritten (wider)
-- as the tree grows; full tiles (width 256) never change.
CREATE TABLE tiles (
    level smallint NOT NULL CHECK (level >= 0),
    idx   bigint   NOT NULL CHECK (idx >= 0),
    width smallint NOT NULL CHECK (width BETWEEN 1 AND 256),
    data  bytea    NOT NULL CHECK (length(data) = 32 * width),
    PRIMARY KEY (level, idx)
);

-- Signed checkpoint notes (C2SP tlog-checkpoint) by tree size.
CREATE TABLE checkpoints (
    size bigint PRIMARY KEY CHECK (size >= 0),
    note bytea  NOT NULL
);

INSERT INTO sequencer (next, schema_version) VALUES (0, 1);
-- Root of the empty tree: SHA-256 of nothing (RFC 6962 section 2.1).
INSERT INTO tree_state (size, root)
    VALUES (0, '\xe3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855'::bytea);

-- The sequencer: appends a batch in one call (one round trip, autocommit). Locks the counter
-- row, then for each entry in order: if its id (leaf hash) is already stored, returns the
-- stored index (a retried append is exactly-once); otherwise stores it at the next index,
-- stores its content (first bytes win) and advances. Returns one index per input entry.
-- Array arguments are parallel; content_hashes[i] and contents[i] may be NULL.
CREATE FUNCTION append_entries(
    ids bytea[], coses bytea[], kinds smallint[], labels smallint[],
    content_hashes bytea[], contents bytea[]
) RETURNS bigint[]
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
DECLARE
    n        bigint;
    out      bigint[] := '{}';
    existing bigint;
BEGIN
    IF cardinality(ids) IS DISTINCT FROM cardinality(coses)
       OR cardinality(ids) IS DISTINCT FROM cardinality(kinds)
       OR cardinality(ids) IS DISTINCT FROM cardinality(labels)
       OR cardinality(ids) IS DISTINCT FROM cardinality(content_hashes)
       OR cardinality(ids) IS DISTINCT FROM cardinality(contents) THEN
        RAISE EXCEPTION 'append_entries: arrays of different lengths';
    END IF;
    SELECT next INTO STRICT n FROM sequencer FOR UPDATE;
    FOR i IN 1 .. coalesce(cardinality(ids), 0) LOOP
        SELECT idx INTO existing FROM entries WHERE id = ids[i];
        IF FOUND THEN
            out := out || existing;
            CONTINUE;
        END IF;
        INSERT INTO entries (idx, id, cose, kind, label, content_hash)
            VALUES (n, ids[i], coses[i], kinds[i], labels[i], content_hashes[i]);
        IF content_hashes[i] IS NOT NULL AND contents[i] IS NOT NULL THEN
            INSERT INTO content (hash, bytes) VALUES (content_hashes[i], contents[i])
                ON CONFLICT (hash) DO NOTHING;
        END IF;
        out := out || n;
        n := n + 1;
    END LOOP;
    UPDATE sequencer SET next = n;
    RETURN out;
END
$$;
