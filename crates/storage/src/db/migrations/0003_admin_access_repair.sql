-- Data only (the schema is unchanged): brings stored access in line with
-- the hardened rules.
-- - App tokens were once minted by one member for another; such a token
--   acts, and is audited, as a member who never chose to hold it (an
--   administrator could act as the owner that way). They are revoked.
-- - A member linked to a person manages them through a `self` grant, and
--   only there; links made before that rule get their grant, and `self`
--   grants on a person no longer linked are revoked.
UPDATE app_tokens
   SET revoked_at = strftime('%Y-%m-%dT%H:%M:%S', 'now') || '.000000Z'
 WHERE revoked_at IS NULL
   AND created_by_membership_id IS NOT NULL
   AND created_by_membership_id <> membership_id;

CREATE TEMP TABLE unlinked_self AS
SELECT m.id AS membership_id, m.household_id, m.person_id
  FROM memberships m
 WHERE m.person_id IS NOT NULL AND m.status <> 'revoked'
   AND NOT EXISTS (
       SELECT 1 FROM person_access_grants g
        WHERE g.membership_id = m.id AND g.person_id = m.person_id
          AND g.revoked_at IS NULL AND g.relationship_type = 'self');

UPDATE person_access_grants
   SET revoked_at = strftime('%Y-%m-%dT%H:%M:%S', 'now') || '.000000Z'
 WHERE revoked_at IS NULL
   AND (membership_id, person_id) IN (SELECT membership_id, person_id FROM unlinked_self);

INSERT INTO person_access_grants
    (household_id, membership_id, person_id, access_level, relationship_type, expires_at,
     created_by_membership_id, created_at)
SELECT household_id, membership_id, person_id, 'manage', 'self', NULL, NULL,
       strftime('%Y-%m-%dT%H:%M:%S', 'now') || '.000000Z'
  FROM unlinked_self;

UPDATE memberships SET permissions_version = permissions_version + 1
 WHERE id IN (SELECT membership_id FROM unlinked_self)
    OR id IN (SELECT g.membership_id FROM person_access_grants g
               JOIN memberships m ON m.id = g.membership_id
              WHERE g.revoked_at IS NULL AND g.relationship_type = 'self'
                AND m.person_id IS NOT g.person_id);

UPDATE person_access_grants
   SET revoked_at = strftime('%Y-%m-%dT%H:%M:%S', 'now') || '.000000Z'
 WHERE revoked_at IS NULL AND relationship_type = 'self'
   AND person_id IS NOT (SELECT m.person_id FROM memberships m
                          WHERE m.id = person_access_grants.membership_id);

DROP TABLE unlinked_self;
