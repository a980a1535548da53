"""Team memory through git: shared memories as files under `<workspace>/.memnest/shared/`
(format.py: the file, folder.py: the folder on disk, sync.py: files in, phase by phase,
and what the tools call; outgoing.py: files out after each commit; scope.py: sharing and
retired global ids; report.py: what a sync tells; state.py: what an open store saw)."""
