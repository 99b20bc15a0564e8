-- The revision of the resource's last successful reconcile (NULL: never applied, and rows
-- written before). A delete calls the action at it: the module or scripts that applied the
-- resource are the ones that can delete it, whatever the removing commit holds.
ALTER TABLE resources ADD COLUMN applied_revision text;
