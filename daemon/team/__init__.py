"""Team memory through git: shared memories as files under `<workspace>/.memnest/shared/`
(format.py: the file, folder.py: the folder on disk, sync.py: files in and out)."""
