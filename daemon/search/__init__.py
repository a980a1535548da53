"""Derived, in-memory structures searches read: vector and keyword indexes, the row
bound, the term table, the timeline, the conflict neighbour table, and ranking."""
