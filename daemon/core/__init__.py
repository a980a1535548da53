"""What every layer shares: settings, errors, the Memory record, small containers
and the read-write lock."""
