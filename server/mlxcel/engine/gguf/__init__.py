"""Serving a GGUF file (llama.cpp's model format) directly: ``load_gguf(path)`` returns what
``mlx_lm.load(path, return_config=True)`` returns for an mlx-lm directory.

- ``gguf_file``: reading tensors (MLX's reader) and metadata;
- ``requantize``: tensor types MLX does not keep, through llama.cpp's ``gguf.quants``;
- ``architectures``: which ``general.architecture`` becomes which mlx-lm model, and its config;
- ``rope_scaling``: linear and Llama 3 rope scaling (the ``rope_freqs`` tensor);
- ``tensor_names``: GGUF tensor names onto the model's parameters; the rope row permutation;
- ``gguf_tokenizer``: ``tokenizer.ggml.*`` as a Hugging Face tokenizer;
- ``model_builder``: the model, and the fast startup check;
- ``export``: the same model written as an mlx-lm directory (``mlxcel-convert``);
- ``unsupported``: the one-line error for a file that cannot be served.
"""

from .gguf_file import is_gguf_path
from .model_builder import check_gguf, load_gguf
from .unsupported import UnsupportedGGUF

__all__ = ["UnsupportedGGUF", "check_gguf", "is_gguf_path", "load_gguf"]
