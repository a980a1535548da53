"""Embedding a call's texts, in chunks that report progress to a streaming caller."""
from __future__ import annotations

import numpy as np

from .context import CallContext

EMBED_CHUNK = 64


def embed_with_progress(ctx: CallContext, texts: list[str]) -> list[np.ndarray]:
    """Embed in chunks so a long batch reports progress to a streaming caller. Chunks are
    cut from the texts in length order, since a batch pads to its longest text."""
    if len(texts) <= EMBED_CHUNK:
        return list(ctx.embedder.embed(texts))
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    vectors: dict[int, np.ndarray] = {}  # text index -> its vector
    for start in range(0, len(order), EMBED_CHUNK):
        chunk = order[start:start + EMBED_CHUNK]
        for i, vector in zip(chunk, ctx.embedder.embed([texts[i] for i in chunk])):
            vectors[i] = vector
        done = start + len(chunk)
        ctx.progress(done, len(texts), f"embedded {done} of {len(texts)}")
    return [vectors[i] for i in range(len(texts))]
