"""Derived, in-memory structures searches read: vector and keyword indexes, the row bound, term table, timeline, neighbour table, and ranking."""
