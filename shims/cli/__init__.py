"""memnest-ctl: the command line (service units, editor configs, doctor, progress bars)."""
