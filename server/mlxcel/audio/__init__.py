"""Whisper transcription and translation for the audio-only server (``--audio-model``): WAV
decoding, the model (mlx-whisper), the single-worker queue, and the audio-only route gate."""
