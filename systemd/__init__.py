"""systemd units for memnestd, shipped as package data (memnest-ctl service install)."""
