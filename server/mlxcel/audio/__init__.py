"""The audio-only server (``--audio-model``): Whisper transcription and translation (WAV
decoding, mlx-whisper) and Kokoro speech (G2P, mlx-audio, audio encoding), the checkpoint kinds,
the single-worker queue, and the audio-only route gate."""
