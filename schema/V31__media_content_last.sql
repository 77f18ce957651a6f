-- Issue 31 item 2 (memory): a media item's bytes become the row's last column. SQLite builds a
-- record with every column in order; a BLOB followed by another column (`created_at` came after
-- `content`) is materialised whole in memory whenever the row is written, so each 5 MiB upload
-- allocated its `zeroblob` twice over (10 MiB) before the bytes were copied in by incremental blob
-- I/O, and the allocator kept those buffers in every thread's arena. A trailing zeroblob is never
-- materialised (SQLite writes its zeros page by page), and reading any other column stops before it.
--
-- Rebuilt column by column rather than by a new table: `ads.media_id` references `media` with
-- ON DELETE RESTRICT, and foreign keys are on during migrations, so the table cannot be dropped.
-- `ADD COLUMN ... NOT NULL` needs a default; every insert names `content`, so it is never used.
ALTER TABLE media ADD COLUMN content_last BLOB NOT NULL DEFAULT x'';
UPDATE media SET content_last = content;
ALTER TABLE media DROP COLUMN content;
ALTER TABLE media RENAME COLUMN content_last TO content;
