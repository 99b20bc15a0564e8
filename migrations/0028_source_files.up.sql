-- The files of each source's last applied revision with their content hashes: a sync
-- compares only the resources of the files whose hash changed (changeplan.ChangedFiles).
-- The path '' holds what every resource was judged with besides its file (the basis).
CREATE TABLE source_files (
    source text NOT NULL,
    path   text NOT NULL,
    hash   text NOT NULL,
    PRIMARY KEY (source, path)
);

-- The rows of a source's changed files.
CREATE INDEX resources_source_file ON resources (source, file_path);
