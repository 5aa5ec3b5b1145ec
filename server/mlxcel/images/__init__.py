"""Image generation for ``--image-model``: a diffusers-layout Z-Image checkpoint (its
component configs), the model through mflux, and the single-worker queue that serves it."""
