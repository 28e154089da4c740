"""Memory Curator's project package.

The embedding engine runs on OpenMP and numpy's matrix products on OpenBLAS; both default to
a thread per core that keeps spinning after each call. On two cores that spinning fights the
threads with work: a query embedding took 12 ms idle but up to 185 ms at p95 beside a busy
process, against 7 ms with one thread and the other core free for FTS (bench/search.py,
bench/api.py). Set here, before anything can load either library, as defaults only.
"""

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
