"""What happens to memories as they come in and over time: ingest (dedup, merge), conflicts, value gates, screening, dream."""
