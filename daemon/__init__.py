"""memnestd: the one process that owns every memory database and the embedding model."""
import os

# Set before numpy loads its BLAS: the daemon's products are small, memory-bound and run from
# many request threads beside onnxruntime's, where BLAS threads only fight over the cores
# (bench/RESULTS.md#search-profiles).
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")


def tune_malloc() -> None:
    """Large blocks always come from mmap and go back to the system when freed (glibc only).

    glibc raises its mmap threshold to the size of each large block freed, up to 32 MB, so
    the daemon's big temporaries (a workspace's matrix while it opens, the snapshot read
    beside it, per-query score arrays) end up in heaps that keep their pages after free:
    with 3 workspaces of 10k open, 540-580 MB resident against 480-500 MB with a fixed
    threshold. A few hundred KB of fresh pages per query is the price."""
    import ctypes
    try:
        mallopt = ctypes.CDLL(None).mallopt  # the C library the interpreter runs on
    except (OSError, AttributeError):  # not glibc (macOS): its allocator does not do this
        return
    m_mmap_threshold = -3
    mallopt(m_mmap_threshold, 128 * 1024)
