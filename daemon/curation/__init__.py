"""What happens to memories as they come in and over time: ingest (dedup, merge),
conflicts, the value rule, injection screening, dream."""
