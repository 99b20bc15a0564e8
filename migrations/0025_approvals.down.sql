DROP TABLE IF EXISTS approvals;
DROP TABLE IF EXISTS approval_requests;
DROP TABLE IF EXISTS source_revisions;
