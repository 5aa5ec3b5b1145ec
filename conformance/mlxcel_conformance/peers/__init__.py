"""Run the suite against peer servers side by side: launchers, GGUF conversion, matrices."""
