-- The change feed's seq was AUTOINCREMENT, so every entry read and rewrote
-- the feed's row of sqlite_sequence (a recorded dose writes two entries) and
-- every commit wrote that table's page to the WAL. Entries are never
-- deleted, so the next seq SQLite gives without it (the largest + 1) is the
-- number AUTOINCREMENT gave: the cursor moves as before. Nothing stored
-- changes, so the definition is rewritten in place as in migration 11.
-- The feed's row in sqlite_sequence stays behind, unread: SQLite consults
-- that table only for AUTOINCREMENT tables, and a file made from the
-- current schema has no sqlite_sequence to delete it from.
PRAGMA writable_schema = ON;
UPDATE sqlite_schema SET sql = replace(sql,
        'seq                 INTEGER PRIMARY KEY AUTOINCREMENT,',
        'seq                 INTEGER PRIMARY KEY,')
  WHERE type = 'table' AND name = 'change_feed';
PRAGMA writable_schema = RESET;
