-- A stamp that changes, in the same commit, whenever a row the access view
-- (src/auth/view.rs) keeps may have changed: app tokens, memberships, OAuth
-- sessions and their tokens, by this server or by a command run beside it.
-- The view then keeps its rows across commits that touch none of them (a
-- recorded dose) instead of reading the caller's credential again after
-- every commit. Random rather than counted, so that a restored copy of the
-- file never matches a stamp the view holds unless its rows are the same.
CREATE TABLE IF NOT EXISTS access_stamp (
    id    INTEGER PRIMARY KEY CHECK (id = 1),
    stamp INTEGER NOT NULL
) STRICT;
CREATE TRIGGER IF NOT EXISTS app_tokens_insert_stamps_access AFTER INSERT ON app_tokens
    BEGIN UPDATE access_stamp SET stamp = random(); END;
CREATE TRIGGER IF NOT EXISTS app_tokens_update_stamps_access AFTER UPDATE ON app_tokens
    BEGIN UPDATE access_stamp SET stamp = random(); END;
CREATE TRIGGER IF NOT EXISTS app_tokens_delete_stamps_access AFTER DELETE ON app_tokens
    BEGIN UPDATE access_stamp SET stamp = random(); END;
CREATE TRIGGER IF NOT EXISTS memberships_insert_stamps_access AFTER INSERT ON memberships
    BEGIN UPDATE access_stamp SET stamp = random(); END;
CREATE TRIGGER IF NOT EXISTS memberships_update_stamps_access AFTER UPDATE ON memberships
    BEGIN UPDATE access_stamp SET stamp = random(); END;
CREATE TRIGGER IF NOT EXISTS memberships_delete_stamps_access AFTER DELETE ON memberships
    BEGIN UPDATE access_stamp SET stamp = random(); END;
CREATE TRIGGER IF NOT EXISTS oauth_sessions_insert_stamps_access AFTER INSERT ON oauth_sessions
    BEGIN UPDATE access_stamp SET stamp = random(); END;
CREATE TRIGGER IF NOT EXISTS oauth_sessions_update_stamps_access AFTER UPDATE ON oauth_sessions
    BEGIN UPDATE access_stamp SET stamp = random(); END;
CREATE TRIGGER IF NOT EXISTS oauth_sessions_delete_stamps_access AFTER DELETE ON oauth_sessions
    BEGIN UPDATE access_stamp SET stamp = random(); END;
CREATE TRIGGER IF NOT EXISTS oauth_tokens_insert_stamps_access AFTER INSERT ON oauth_tokens
    BEGIN UPDATE access_stamp SET stamp = random(); END;
CREATE TRIGGER IF NOT EXISTS oauth_tokens_update_stamps_access AFTER UPDATE ON oauth_tokens
    BEGIN UPDATE access_stamp SET stamp = random(); END;
CREATE TRIGGER IF NOT EXISTS oauth_tokens_delete_stamps_access AFTER DELETE ON oauth_tokens
    BEGIN UPDATE access_stamp SET stamp = random(); END;
INSERT OR IGNORE INTO access_stamp (id, stamp) VALUES (1, random());
