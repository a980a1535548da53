"""memnestd: the one process that owns every memory database and the embedding model."""
import os

# Set before numpy loads its BLAS. The daemon's matrix products are memory-bound
# matrix-vector products run from many request threads at once, beside onnxruntime's own
# threads; a multi-threaded OpenBLAS there measured 8 ms where one thread takes 0.6 ms.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
