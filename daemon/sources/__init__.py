"""Other tools' memory files, read as the facts a person would write down: where each kind
keeps its files for a workspace (kinds.py), how they are found and read without following a
planted link (files.py), and how a Markdown file splits into sections and bullets
(markdown.py). Pure reading: files in, Units out; what becomes of them in the store is
operations/adopting.py's work."""
