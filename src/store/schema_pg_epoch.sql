
-- The content epoch (spec/storage.md section 11.2, Store::content_epoch): one row, moved by
-- every statement that changes or removes content rows or rewrites or removes entry rows. A
-- handle keeps what it verified of entries (texts, warm retrievals, a session's judgements)
-- only while it stays the same. Appends (inserts), the sealing of sequenced rows (their tag)
-- and the context index column (set after sequencing) do not move it. Added to older ledgers
-- when first connected.
CREATE TABLE content_epoch (
    one   boolean PRIMARY KEY DEFAULT true CHECK (one),
    epoch bigint  NOT NULL
);

INSERT INTO content_epoch (epoch) VALUES (0);

CREATE FUNCTION content_changed() RETURNS trigger
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
BEGIN
    UPDATE content_epoch SET epoch = epoch + 1;
    RETURN NULL;
END
$$;

CREATE TRIGGER content_changed AFTER UPDATE OR DELETE OR TRUNCATE ON content
    FOR EACH STATEMENT EXECUTE FUNCTION content_changed();

CREATE TRIGGER entries_changed
    AFTER UPDATE OF idx, id, cose, kind, label, content_hash OR DELETE OR TRUNCATE
    ON entries FOR EACH STATEMENT EXECUTE FUNCTION content_changed();
