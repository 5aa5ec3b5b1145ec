"""mlxcel: the reference MLX inference server checked by the mlxcel conformance suite."""

__version__ = "0.1.0"
