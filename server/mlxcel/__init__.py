"""mlxcel: the reference MLX inference server checked by the mlxcel conformance suite."""

from .openblas_kernels import prefer_small_batch_kernels

__version__ = "0.1.0"

prefer_small_batch_kernels()  # before numpy loads OpenBLAS: openblas_kernels.py
